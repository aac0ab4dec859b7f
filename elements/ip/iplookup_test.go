package ip

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math/rand/v2"
	"net/netip"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/junction-dataplane/junction/elements"
	"github.com/junction-dataplane/junction/elements/elementtest"
	"github.com/junction-dataplane/junction/elements/ip/route"
)

func TestIPLookupConfigErrors(t *testing.T) {
	dir := t.TempDir()
	file := func(body string) string {
		f, err := os.CreateTemp(dir, "routes")
		if err != nil {
			t.Fatal(err)
		}
		f.WriteString(body)
		f.Close()
		return f.Name()
	}
	good := file("# a routes file\n\n10.0.0.0/8 via 10.1.0.2 out 0   # backbone\n  192.168.1.0/24 out 2\n")
	tests := []struct {
		name   string
		cfg    IPLookupConfig
		key    string // "" = valid
		want   string
		outs   int
		routes int
	}{
		{name: "routes", cfg: IPLookupConfig{Routes: []string{"10.0.0.0/8 out 0", "0.0.0.0/0 via 192.0.2.1 out 3"}, Miss: -1}, outs: 4, routes: 2},
		{name: "miss widens", cfg: IPLookupConfig{Routes: []string{"10.0.0.0/8 out 0"}, Miss: 5}, outs: 6, routes: 1},
		{name: "file", cfg: IPLookupConfig{RoutesFile: good, Miss: -1}, outs: 3, routes: 2},
		{name: "file and routes", cfg: IPLookupConfig{Routes: []string{"0.0.0.0/0 out 0"}, RoutesFile: good, Miss: -1}, outs: 3, routes: 3},
		{name: "no routes", cfg: IPLookupConfig{Routes: []string{}, RoutesFile: "", Source: "config", Miss: -1}, key: "routes", want: "no routes"},
		{name: "no table", cfg: IPLookupConfig{Miss: -1}, key: "table", want: "no [tables.main]"},
		{name: "table key on a reader", cfg: IPLookupConfig{Offload: []string{"lan"}, Miss: -1}, key: "offload", want: "set it in [tables.main]"},
		{name: "entry 2 bad prefix", cfg: IPLookupConfig{Routes: []string{"10.0.0.0/8 out 0", "10.0.0.0/40 out 1"}, Miss: -1},
			key: "routes", want: `entry 2 "10.0.0.0/40 out 1": bad prefix`},
		{name: "entry 1 bad via", cfg: IPLookupConfig{Routes: []string{"10.0.0.0/8 via x out 0"}, Miss: -1},
			key: "routes", want: `entry 1 "10.0.0.0/8 via x out 0": bad via`},
		{name: "entry 3 missing out", cfg: IPLookupConfig{Routes: []string{"1.0.0.0/8 out 0", "2.0.0.0/8 out 0", "3.0.0.0/8"}, Miss: -1},
			key: "routes", want: `entry 3 "3.0.0.0/8": missing "out PORT"`},
		{name: "out of range", cfg: IPLookupConfig{Routes: []string{"10.0.0.0/8 out 300"}, Miss: -1},
			key: "routes", want: "out 300 is out of range"},
		{name: "duplicate", cfg: IPLookupConfig{Routes: []string{"10.0.0.0/8 out 0", "10.0.0.0/8 out 1"}, Miss: -1},
			key: "routes", want: "already routed by routes entry 1"},
		{name: "miss -2", cfg: IPLookupConfig{Routes: []string{"10.0.0.0/8 out 0"}, Miss: -2}, key: "miss"},
		{name: "miss 256", cfg: IPLookupConfig{Routes: []string{"10.0.0.0/8 out 0"}, Miss: 256}, key: "miss"},
		{name: "missing file", cfg: IPLookupConfig{RoutesFile: filepath.Join(dir, "nope"), Miss: -1}, key: "routes_file", want: "no such file"},
		{name: "empty file", cfg: IPLookupConfig{RoutesFile: file("# nothing\n\n"), Miss: -1}, key: "routes_file", want: "holds no routes"},
	}
	bad := file("10.0.0.0/8 out 0\n# comment\n\n192.168.0.0/16 via 10.0.0.256 out 1\n")
	tests = append(tests, struct {
		name   string
		cfg    IPLookupConfig
		key    string
		want   string
		outs   int
		routes int
	}{name: "file line 4", cfg: IPLookupConfig{RoutesFile: bad, Miss: -1}, key: "routes_file",
		want: bad + `:4: "192.168.0.0/16 via 10.0.0.256 out 1": bad via`})
	dup := file("10.0.0.0/8 out 0\n10.0.0.0/8 out 1\n")
	tests = append(tests, struct {
		name   string
		cfg    IPLookupConfig
		key    string
		want   string
		outs   int
		routes int
	}{name: "file duplicate of entry", cfg: IPLookupConfig{Routes: []string{"1.0.0.0/8 out 0"}, RoutesFile: dup, Miss: -1}, key: "routes_file",
		want: dup + `:2: "10.0.0.0/8 out 1": prefix 10.0.0.0/8 already routed by ` + dup + ":1"})
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c := tc.cfg
			err := c.Validate()
			if tc.key == "" {
				if err != nil {
					t.Fatal(err)
				}
				if _, out := c.Ports(); out != tc.outs {
					t.Errorf("outputs %d, want %d", out, tc.outs)
				}
				if len(c.tbl.Parsed()) != tc.routes {
					t.Errorf("%d routes, want %d", len(c.tbl.Parsed()), tc.routes)
				}
				return
			}
			var ke *elements.KeyError
			if !errors.As(err, &ke) || ke.Key != tc.key || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %v, want key %q containing %q", err, tc.key, tc.want)
			}
		})
	}
}

func ipFrameTo(t testing.TB, dst string) []byte { return mkFrame(t, frameOpts{dst: dst}) }

func TestIPLookupElement(t *testing.T) {
	cfg := &IPLookupConfig{Routes: []string{
		"10.0.0.0/8 via 10.1.0.2 out 0",
		"192.168.1.0/24 out 1",
		"192.168.1.128/25 via 192.168.1.1 out 2",
	}, Miss: -1}
	tests := []struct {
		name    string
		cfg     *IPLookupConfig
		frame   []byte
		out     int // -1 dropped
		nextHop string
		reason  string
	}{
		{name: "via", frame: ipFrameTo(t, "10.9.8.7"), out: 0, nextHop: "10.1.0.2"},
		{name: "connected", frame: ipFrameTo(t, "192.168.1.5"), out: 1, nextHop: "192.168.1.5"},
		{name: "longer wins", frame: ipFrameTo(t, "192.168.1.200"), out: 2, nextHop: "192.168.1.1"},
		{name: "no route", frame: ipFrameTo(t, "8.8.8.8"), out: -1, reason: "no route"},
		{name: "miss port", cfg: &IPLookupConfig{Routes: cfg.Routes, Miss: 3}, frame: ipFrameTo(t, "8.8.8.8"), out: 3},
		{name: "too short", frame: ipFrameTo(t, "10.0.0.1")[:33], out: -1, reason: "too short"},
		{name: "empty", frame: nil, out: -1, reason: "too short"},
		{name: "short ipv6", frame: edit(ipFrameTo(t, "10.0.0.1"), func(f []byte) []byte { f[14] = 0x60; return f })[:14+39], out: -1, reason: "too short"},
		{name: "version 5", frame: edit(ipFrameTo(t, "10.0.0.1"), func(f []byte) []byte { f[14] = 0x55; return f }), out: -1, reason: "not ip"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c := cfg
			if tc.cfg != nil {
				c = tc.cfg
			}
			c2 := *c
			h := elementtest.New(t, "IPLookup", &c2, nil)
			p := h.Packet(tc.frame)
			p.NextHop = netip.MustParseAddr("1.1.1.1") // stale annotation
			h.PushBatch(0, p)
			for i, o := range h.Outs {
				want := 0
				if i == tc.out {
					want = 1
				}
				if len(o.Pkts) != want {
					t.Fatalf("output %d: %d packets, want %d", i, len(o.Pkts), want)
				}
			}
			if tc.out < 0 {
				if h.Counter(tc.reason) != 1 || h.Stats.Drops() != 1 {
					t.Errorf("%q = %d, drops %d; want 1, 1", tc.reason, h.Counter(tc.reason), h.Stats.Drops())
				}
			} else {
				q := h.Outs[tc.out].Pkts[0]
				want := netip.Addr{}
				if tc.nextHop != "" {
					want = netip.MustParseAddr(tc.nextHop)
				}
				if q.NextHop != want {
					t.Errorf("next hop %v, want %v", q.NextHop, want)
				}
			}
			h.CheckNoLeak()
		})
	}
}

// A batch spread over ports keeps each port's packets in arrival order; a
// batch for one port goes on whole.
func TestIPLookupSplit(t *testing.T) {
	cfg := &IPLookupConfig{Routes: []string{"10.0.0.0/8 out 0", "20.0.0.0/8 out 1", "30.0.0.0/8 out 2"}, Miss: -1}
	h := elementtest.New(t, "IPLookup", cfg, nil)
	rng := rand.New(rand.NewPCG(7, 7))
	var frames [][]byte
	var want [3][]string
	for i := range 64 {
		port := rng.IntN(4) // 3 = no route
		dst := fmt.Sprintf("%d.0.%d.%d", 10*(port+1), i/256, i%256)
		if port < 3 {
			want[port] = append(want[port], dst)
		}
		frames = append(frames, ipFrameTo(t, dst))
	}
	h.Push(0, frames...)
	for port := range 3 {
		var got []string
		for _, p := range h.Outs[port].Pkts {
			got = append(got, addrU32(binary.BigEndian.Uint32(p.Data[30:])).String())
		}
		if !slices.Equal(got, want[port]) {
			t.Errorf("port %d: got %v, want %v", port, got, want[port])
		}
	}
	if int(h.Counter("no route")) != 64-len(want[0])-len(want[1])-len(want[2]) {
		t.Errorf("no route = %d", h.Counter("no route"))
	}
	h.CheckNoLeak()
	h.Reset()
	// Home run: all to port 1.
	for i := range frames {
		frames[i] = ipFrameTo(t, fmt.Sprintf("20.1.1.%d", i))
	}
	h.Push(0, frames...)
	if len(h.Outs[1].Pkts) != 64 || len(h.Outs[0].Pkts)+len(h.Outs[2].Pkts) != 0 {
		t.Errorf("home run: %d %d %d", len(h.Outs[0].Pkts), len(h.Outs[1].Pkts), len(h.Outs[2].Pkts))
	}
	h.CheckNoLeak()
}

// Routes installed at run time through the shared Table take effect at the
// next batch; a route to a port the element lacks is dropped, not a panic.
func TestIPLookupRuntimeUpdate(t *testing.T) {
	h := elementtest.New(t, "IPLookup", &IPLookupConfig{Routes: []string{"10.0.0.0/8 out 0", "0.0.0.0/0 out 1"}, Miss: -1}, nil)
	tb := h.Element.(*IPLookup).Table()
	f := ipFrameTo(t, "10.1.1.1")
	h.Push(0, f)
	err := tb.Update(func(b *route.Builder) error {
		return b.Insert(route.Route{Prefix: netip.MustParsePrefix("10.1.0.0/16"), Out: 1})
	})
	if err != nil {
		t.Fatal(err)
	}
	h.Push(0, f)
	if len(h.Outs[0].Pkts) != 1 || len(h.Outs[1].Pkts) != 1 {
		t.Errorf("before/after update: %d on 0, %d on 1; want 1, 1", len(h.Outs[0].Pkts), len(h.Outs[1].Pkts))
	}
	if err := tb.Replace([]route.Route{{Prefix: netip.MustParsePrefix("0.0.0.0/0"), Out: 7}}); err != nil {
		t.Fatal(err)
	}
	h.Push(0, f)
	if h.Counter("no such port") != 1 {
		t.Errorf("no such port = %d", h.Counter("no such port"))
	}
	if err := tb.Replace([]route.Route{{Prefix: netip.MustParsePrefix("10.0.0.1/8")}}); err == nil {
		t.Errorf("Replace accepted a prefix with host bits")
	}
	h.CheckNoLeak()
}

// TestTableRCU swaps versions while readers look up; run with -race. Each
// reader checks that every answer belongs to one published version.
func TestIPLookupAllocs(t *testing.T) {
	cfg := &IPLookupConfig{Routes: []string{"10.0.0.0/8 via 10.1.0.2 out 0", "192.168.1.0/24 out 1"}, Miss: -1}
	h := elementtest.New(t, "IPLookup", cfg, &elementtest.Options{Sink: true})
	a, b, miss := ipFrameTo(t, "10.1.2.3"), ipFrameTo(t, "192.168.1.9"), ipFrameTo(t, "8.8.8.8")
	if n := h.AllocsPerBatch(100, a, b, miss, a[:20]); n != 0 {
		t.Errorf("split batch: allocs = %v, want 0", n)
	}
	if n := h.AllocsPerBatch(100, a); n != 0 {
		t.Errorf("home run: allocs = %v, want 0", n)
	}
}

func BenchmarkIPLookup(b *testing.B) {
	rng := rand.New(rand.NewPCG(1, 1))
	routes := []string{"0.0.0.0/0 via 192.0.2.1 out 1"}
	// 1,000 routes with a full table's prefix-length mix, over two ports.
	for _, r := range route.GenerateRoutes(route.GenOptions{Seed: 1, Routes: 1000, Ports: 2}) {
		routes = append(routes, r.String())
	}
	cfg := &IPLookupConfig{Routes: routes, Miss: -1}
	var frames [][]byte
	for range 64 {
		frames = append(frames, ipFrameTo(b, addrU32(rng.Uint32()&0x7fffffff|0x01000000).String()))
	}
	b.Run("one-port", func(b *testing.B) {
		h := elementtest.New(b, "IPLookup", &IPLookupConfig{Routes: []string{"0.0.0.0/0 via 192.0.2.1 out 0"}, Miss: -1}, &elementtest.Options{Sink: true})
		h.Bench(b, frames...)
	})
	b.Run("1k-routes-2-ports", func(b *testing.B) {
		c := *cfg
		if err := c.Validate(); err != nil {
			b.Fatal(err)
		}
		h := elementtest.New(b, "IPLookup", &c, &elementtest.Options{Sink: true})
		h.Bench(b, frames...)
	})
}
