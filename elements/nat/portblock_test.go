package nat_test

import (
	"fmt"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/junction-dataplane/junction/elements"
	ct "github.com/junction-dataplane/junction/elements/conntrack/cttest"
)

// blockRanges is the ports of a block as port_block's log line gives
// them: ranges of consecutive units, ascending, separated by commas.
func blockRanges(units map[uint16]bool) string {
	us := make([]int, 0, len(units))
	for u := range units {
		us = append(us, int(u))
	}
	slices.Sort(us)
	var parts []string
	for j := 0; j < len(us); {
		k := j + 1
		for k < len(us) && us[k] == us[k-1]+1 {
			k++
		}
		parts = append(parts, fmt.Sprintf("%d-%d", us[j]*16, (us[k-1]+1)*16-1))
		j = k
	}
	return strings.Join(parts, ",")
}

var blockLine = regexp.MustCompile(`^snat \(worker (\d+)\): \d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z port block in use: (\S+) -> (\S+) ports (\S+)$`)

// TestPortBlockLog: with port_block, each inside host's block is logged
// once per worker that maps a port of it, when Tick runs after the first
// such mapping (not from Push): the inside address, the outside address
// and the block's ports, which are those the rule gives (blockUnits) and
// hold every port the host was given there; further flows log nothing;
// the rule itself is logged once.
func TestPortBlockLog(t *testing.T) {
	for _, workers := range []int{1, 2} {
		cfg := mappingConfig(workers)
		cfg.Inside, cfg.PortBlock = "192.168.1.0/24", 64
		r := newEIMRig(t, workers, cfg)
		used := map[string]map[uint16]bool{} // "host/worker" -> ports given
		for round := range 2 {
			for _, host := range []int{10, 11, 40} {
				src := fmt.Sprintf("192.168.1.%d", host)
				for i := range 12 {
					sport := uint16(30000 + 37*i + host + 1000*round)
					p := r.out("udp", src, sport, client, 3478)
					if p == 0 {
						t.Fatalf("%s:%d dropped", src, sport)
					}
					key := fmt.Sprintf("%d/%d", host, r.last)
					if used[key] == nil {
						used[key] = map[uint16]bool{}
					}
					used[key][p] = true
				}
			}
			if round == 0 && strings.Contains(r.log.String(), "port block in use") {
				t.Fatalf("%d workers: a block logged before Tick (from the packets' path):\n%s", workers, r.log.String())
			}
			for _, s := range r.s {
				s.(elements.Ticker).Tick(0)
			}
		}
		lines := strings.Split(strings.TrimSpace(r.log.String()), "\n")
		rule, seen := 0, map[string]bool{}
		for _, l := range lines {
			if strings.Contains(l, "port blocks of 64") {
				rule++
				continue
			}
			m := blockLine.FindStringSubmatch(l)
			if m == nil {
				t.Fatalf("%d workers: unexpected log line %q", workers, l)
			}
			var host, w int
			fmt.Sscanf(m[2], "192.168.1.%d", &host)
			fmt.Sscanf(m[1], "%d", &w)
			key := fmt.Sprintf("%d/%d", host, w)
			if seen[key] {
				t.Fatalf("%d workers: host %d's block on worker %d logged twice", workers, host, w)
			}
			seen[key] = true
			if m[3] != pub {
				t.Errorf("%d workers: %q: outside address %s, want %s", workers, l, m[3], pub)
			}
			units := blockUnits(host, 4, w, workers)
			if want := blockRanges(units); m[4] != want {
				t.Errorf("%d workers: %q: ports %s, want %s", workers, l, m[4], want)
			}
			for p := range used[key] {
				if !units[p/16] {
					t.Errorf("%d workers: host %d got port %d on worker %d, outside the logged block", workers, host, p, w)
				}
			}
		}
		if rule != 1 {
			t.Errorf("%d workers: the rule logged %d times, want once", workers, rule)
		}
		for key := range used {
			if !seen[key] {
				t.Errorf("%d workers: host/worker %s used its block, not logged", workers, key)
			}
		}
		if len(seen) != len(used) {
			t.Errorf("%d workers: %d blocks logged, %d used", workers, len(seen), len(used))
		}
	}
}

// TestPortBlockNoAllocs: new flows of hosts whose blocks are used for the
// first time (each noted for the log) allocate nothing in Push; the lines
// are written by Tick.
func TestPortBlockNoAllocs(t *testing.T) {
	cfg := mappingConfig(1)
	cfg.Inside, cfg.PortBlock = "192.168.1.0/24", 64
	r := newEIMRig(t, 1, cfg)
	frames := make([][]byte, 0, 250)
	for i := range 250 {
		frames = append(frames, ct.Frame(ct.F{Proto: "udp", Src: fmt.Sprintf("192.168.1.%d", 1+i), Dst: client, Sport: 2000, Dport: 53}))
	}
	// 249 runs and the warm-up: each host's frame once.
	if allocs := r.newFlowAllocs(frames, 249); allocs != 0 {
		t.Errorf("%.1f allocations a new flow", allocs)
	}
	r.s[0].(elements.Ticker).Tick(0)
	if c := strings.Count(r.log.String(), "port block in use"); c != 250 {
		t.Errorf("%d blocks logged, want 250 (one per host)", c)
	}
}

var bulkLine = regexp.MustCompile(`^snat \(worker (\d+)\): \S+ port block (allocated|released): (\S+) -> (\S+) ports (\S+)$`)

// bulkEvent is a parsed bulk block line.
type bulkEvent struct {
	kind, in string
	worker   int
	ports    string          // as logged
	set      map[uint16]bool // its ports
}

// bulkEvents parses the bulk block lines of log from offset on.
func bulkEvents(t *testing.T, log string) []bulkEvent {
	t.Helper()
	var evs []bulkEvent
	for _, l := range strings.Split(strings.TrimSpace(log), "\n") {
		if l == "" || strings.Contains(l, "bulk port blocks of") {
			continue
		}
		m := bulkLine.FindStringSubmatch(l)
		if m == nil {
			t.Fatalf("unexpected log line %q", l)
		}
		if m[4] != pub {
			t.Fatalf("%q: outside address %s, want %s", l, m[4], pub)
		}
		var ev bulkEvent
		ev.kind, ev.in = m[2], m[3]
		fmt.Sscanf(m[1], "%d", &ev.worker)
		ev.ports, ev.set = m[5], map[uint16]bool{}
		for _, r := range strings.Split(m[5], ",") {
			var lo, hi int
			if n, _ := fmt.Sscanf(r, "%d-%d", &lo, &hi); n != 2 || lo%16 != 0 || hi%16 != 15 || hi < lo {
				t.Fatalf("%q: %q is not a range of whole units", l, r)
			}
			for p := lo; p <= hi; p++ {
				ev.set[uint16(p)] = true
			}
		}
		evs = append(evs, ev)
	}
	return evs
}

// TestPortBlockBulk: bulk port blocks (port_block_alloc = "bulk") with 1
// and 2 workers: a host's first mapping on a worker takes a block, logged
// once ("allocated", written by Tick) with the ports its mappings then all
// come from; two hosts never hold the same ports; the mapping stays
// endpoint-independent (REQ-1); a full block and a worker without free
// blocks drop new flows ("ports exhausted"); once the flows and the
// mappings' timeout are gone, Tick gives every block back ("released",
// the same ports) and a host refused before gets one.
func TestPortBlockBulk(t *testing.T) {
	for _, workers := range []int{1, 2} {
		cfg := mappingConfig(workers)
		// 1024-1279: 16 units, 4 blocks of 64 ports with one worker.
		cfg.Inside, cfg.PortBlock, cfg.PortBlockAlloc, cfg.Ports = "192.168.1.0/24", 64, "bulk", "1024-1279"
		r := newEIMRig(t, workers, cfg)
		got := map[string]map[int]map[uint16]bool{} // host -> worker -> ports
		hosts := []string{"192.168.1.10", "192.168.1.11", "192.168.1.12", "192.168.1.13"}
		dropped := 0
		for i := range 40 {
			for _, h := range hosts {
				sport := uint16(20000 + 7*i)
				p := r.out("udp", h, sport, client, 3478)
				if p == 0 {
					dropped++
					continue
				}
				if q := r.out("udp", h, sport, "198.51.100.30", 53); q != p {
					t.Fatalf("%d workers: %s:%d: %d then %d (REQ-1)", workers, h, sport, p, q)
				}
				if got[h] == nil {
					got[h] = map[int]map[uint16]bool{}
				}
				if got[h][r.last] == nil {
					got[h][r.last] = map[uint16]bool{}
				}
				got[h][r.last][p] = true
			}
		}
		if strings.Contains(r.log.String(), "allocated") {
			t.Fatalf("%d workers: a block logged before Tick", workers)
		}
		for _, s := range r.s {
			s.(elements.Ticker).Tick(0)
		}
		evs := bulkEvents(t, r.log.String())
		type blk struct {
			in     string
			worker int
		}
		held := map[blk]bulkEvent{}
		for _, ev := range evs {
			k := blk{ev.in, ev.worker}
			if ev.kind != "allocated" || held[k].kind != "" {
				t.Fatalf("%d workers: %+v: want one allocation per host and worker", workers, ev)
			}
			if len(ev.set) != 64 {
				t.Fatalf("%d workers: %+v: %d ports, want a block of 64", workers, ev, len(ev.set))
			}
			for k2, o := range held {
				for p := range o.set {
					if k2.worker == ev.worker && ev.set[p] {
						t.Fatalf("%d workers: %s's block %s overlaps %s's %s", workers, ev.in, ev.ports, o.in, o.ports)
					}
				}
			}
			held[k] = ev
		}
		for h, byW := range got {
			for w, ports := range byW {
				ev, ok := held[blk{h, w}]
				if !ok {
					t.Fatalf("%d workers: %s mapped on worker %d, no block logged", workers, h, w)
				}
				for p := range ports {
					if !ev.set[p] {
						t.Fatalf("%d workers: %s got %d on worker %d, outside its block %s", workers, h, p, w, ev.ports)
					}
				}
			}
		}
		// 40 endpoints a host: with one worker each fits its block of
		// 64; with two, a worker may have fewer blocks than hosts.
		if workers == 1 && dropped != 0 {
			t.Errorf("1 worker: %d flows dropped, want none (40 endpoints a 64-port block)", dropped)
		}
		if v := r.sStats.Counter("ports exhausted").Load(); int(v) != dropped {
			t.Errorf("%d workers: ports exhausted %d, dropped %d", workers, v, dropped)
		}
		// A fifth host: one worker has no free block.
		if workers == 1 {
			if p := r.out("udp", "192.168.1.14", 20000, client, 3478); p != 0 {
				t.Fatalf("1 worker: a fifth host got port %d with every block held", p)
			}
			// A host's block full: 64 mappings, the 65th dropped.
			full := 0
			for i := range 30 {
				if r.out("udp", hosts[0], uint16(30000+i), client, 3478) != 0 {
					full++
				}
			}
			if full != 24 {
				t.Errorf("1 worker: %d more mappings in a block holding 40, want 24", full)
			}
		}
		// Everything ends: flows expire, then the mappings' timeout.
		n := len(r.log.String())
		r.advance(30 * time.Minute)
		for range 4 {
			for _, s := range r.s {
				s.(elements.Ticker).Tick(0)
			}
		}
		rel := bulkEvents(t, r.log.String()[n:])
		if len(rel) != len(held) {
			t.Fatalf("%d workers: %d blocks released, %d held:\n%s", workers, len(rel), len(held), r.log.String()[n:])
		}
		for _, ev := range rel {
			a := held[blk{ev.in, ev.worker}]
			if ev.kind != "released" || a.ports != ev.ports {
				t.Fatalf("%d workers: %+v, want the release of %+v", workers, ev, a)
			}
		}
		if workers == 1 {
			if p := r.out("udp", "192.168.1.14", 20000, client, 3478); p == 0 {
				t.Fatalf("1 worker: the fifth host still refused after every block was released")
			}
		}
	}
}
