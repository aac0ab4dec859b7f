package configs_test

import (
	"encoding/binary"
	"fmt"
	"net/netip"
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/junction-dataplane/junction/conf"
	"github.com/junction-dataplane/junction/drivers"
	"github.com/junction-dataplane/junction/packet"
	"github.com/junction-dataplane/junction/pipeline"
)

// memDevice is an in-memory device for whole-graph tests: it receives the
// frames queued in it and keeps what is transmitted.
type memDevice struct {
	name   string
	index  int
	info   drivers.Info
	pool   *packet.Pool
	frames [][]byte
	next   int
	mu     sync.Mutex
	sent   [][]byte
}

var (
	memMu      sync.Mutex
	memDevices = map[string]*memDevice{}
	memInput   = map[string][][]byte{}
)

type memConfig struct{}

func init() {
	drivers.Register(drivers.Driver{
		Name:      "testmem",
		NewConfig: func() any { return &memConfig{} },
		Open: func(cfg any, ctx drivers.OpenContext) (drivers.Device, error) {
			memMu.Lock()
			defer memMu.Unlock()
			mac := ctx.MAC
			if mac == (packet.MAC{}) {
				mac = packet.MAC{2, 0, 0, 0, 0xee, byte(ctx.Index + 1)}
			}
			d := &memDevice{name: ctx.Name, index: ctx.Index, pool: packet.NewPool(256), frames: memInput[ctx.Name],
				info: drivers.Info{Name: ctx.Name, Driver: "testmem", MAC: mac, Addresses: ctx.Addresses}}
			memDevices[ctx.Name] = d
			return d, nil
		},
		Doc: conf.Doc{Summary: "in-memory test device"},
	})
}

func (d *memDevice) RxQueues() int { return 1 }

// Receive delivers one frame per call, so that every frame of a test
// arrives in its own round, after what the graph learned from the ones
// before (an ARP reply, a flow's fast path).
func (d *memDevice) Receive(q int, b *packet.Batch) int {
	n := 0
	for n == 0 && !b.Full() && d.next < len(d.frames) {
		p := d.pool.Get()
		if p == nil {
			break
		}
		f := d.frames[d.next]
		d.next++
		if !p.SetFrame(f) {
			p.Free()
			continue
		}
		p.InDevice = uint16(d.index)
		b.Add(p)
		n++
	}
	return n
}
func (d *memDevice) Drained(q int) bool { return d.next >= len(d.frames) }
func (d *memDevice) Transmit(w int, b *packet.Batch) {
	d.mu.Lock()
	for _, p := range b.Pkts {
		d.sent = append(d.sent, append([]byte(nil), p.Data...))
		p.Free()
	}
	d.mu.Unlock()
	b.Reset()
}
func (d *memDevice) Flush() error             { return nil }
func (d *memDevice) Close() error             { return nil }
func (d *memDevice) Info() drivers.Info       { return d.info }
func (d *memDevice) Stats() []drivers.Counter { return nil }

// routerOnMem is router.toml with its pcap devices replaced by testmem ones.
func routerOnMem(t testing.TB) []byte {
	src, err := os.ReadFile("router.toml")
	if err != nil {
		t.Fatal(err)
	}
	src = regexp.MustCompile(`(?m)^(read|write)\s*=.*$`).ReplaceAll(src, nil)
	return regexp.MustCompile(`"pcap"`).ReplaceAll(src, []byte(`"testmem"`))
}

// runMem runs the router graph over the given LAN frames and returns the
// LAN and WAN devices after the run.
func runMem(t testing.TB, graph []byte, lan [][]byte) (*memDevice, *memDevice) {
	return runMem2(t, graph, lan, nil)
}

// runMem2 is runMem with frames for both devices.
func runMem2(t testing.TB, graph []byte, lan, wan [][]byte) (*memDevice, *memDevice) {
	memMu.Lock()
	memInput["lan"] = lan
	memInput["wan"] = wan
	memMu.Unlock()
	g, err := pipeline.Parse("router-mem.toml", graph)
	if err != nil {
		t.Fatal(err)
	}
	runToEnd(t, g, pipeline.Options{NoPin: true, Workers: 1})
	memMu.Lock()
	defer memMu.Unlock()
	return memDevices["lan"], memDevices["wan"]
}

// FuzzRouterGraph feeds random frames through the whole router graph: no
// panic, and every buffer comes back to its pool.
func FuzzRouterGraph(f *testing.F) {
	graph := routerOnMem(f)
	seed := make([]byte, 64)
	copy(seed, []byte{2, 0, 0, 0, 1, 1, 2, 0, 0, 0, 1, 2, 8, 0, 0x45, 0, 0, 50, 0, 0, 0, 0, 64, 17})
	binary.BigEndian.PutUint32(seed[26:], 0x0a010002)
	binary.BigEndian.PutUint32(seed[30:], 0x0a020005)
	f.Add(seed)
	f.Add([]byte{})
	f.Add(make([]byte, 13))
	arp := make([]byte, 42)
	copy(arp[12:], []byte{8, 6, 0, 1, 8, 0, 6, 4, 0, 1})
	f.Add(arp)
	f.Fuzz(func(t *testing.T, data []byte) {
		// One fuzz input becomes several frames: the input itself and
		// variants with an IPv4 header forced in, so that deep paths run.
		frames := [][]byte{data}
		if len(data) >= 34 {
			v := append([]byte(nil), data...)
			v[12], v[13], v[14] = 8, 0, 0x45
			frames = append(frames, v)
			w := append([]byte(nil), v...)
			w[22] = 1 // TTL 1: the ICMP error path
			frames = append(frames, w)
		}
		lan, wan := runMem(t, graph, frames)
		if n := lan.pool.Outstanding(); n != 0 {
			t.Fatalf("lan pool: %d buffers not returned", n)
		}
		if n := wan.pool.Outstanding(); n != 0 {
			t.Fatalf("wan pool: %d buffers not returned", n)
		}
	})
}

// natGatewayOnMem is nat-gateway.toml with its afpacket devices replaced
// by testmem ones (without the in-kernel fast path, which testmem has not:
// FastTrack then fast-tracks in the graph) and a flow table small enough
// for a test.
func natGatewayOnMem(t testing.TB) []byte {
	src, err := os.ReadFile("nat-gateway.toml")
	if err != nil {
		t.Fatal(err)
	}
	src = regexp.MustCompile(`(?m)^(interface|fastpath|offload)\s*=.*$`).ReplaceAll(src, nil)
	src = regexp.MustCompile(`(?m)^capacity\s*=.*$`).ReplaceAll(src, []byte("capacity = 1024"))
	return regexp.MustCompile(`"afpacket"`).ReplaceAll(src, []byte(`"testmem"`))
}

// arpReply is an ARP reply from ip (MAC mac) to the router, which teaches
// ARPQuerier the next hop so that the slow path reaches FastTrackLearn.
func arpReply(mac packet.MAC, ip, to string) []byte {
	f := make([]byte, packet.EthernetLen+packet.ARPLen)
	eth := packet.Ethernet(f)
	eth.SetSrc(mac)
	eth.SetType(packet.EtherTypeARP)
	a := packet.InitARP(f[packet.EthernetLen:], packet.ARPReply)
	a.SetSenderMAC(mac)
	a.SetSenderIP(netip.MustParseAddr(ip))
	a.SetTargetIP(netip.MustParseAddr(to))
	return f
}

// lanWithARPReply is the LAN side's opening: the inside host's ARP reply,
// after two frames nobody handles (delivered one per round, they let the
// first WAN packets make ARPQuerier ask first: it learns from a reply only
// what it asked for).
func lanWithARPReply() [][]byte {
	return [][]byte{make([]byte, 60), make([]byte, 60), arpReply(packet.MAC{2, 0, 0, 0, 0, 10}, "192.168.1.10", "192.168.1.1")}
}

// forceIPv4 turns data (at least 42 bytes) into an IPv4 frame of protocol
// proto from src to dst:dport with a valid header checksum, keeping the
// rest of the fuzzed bytes (ports, TCP flags, payload, UDP checksum); the
// UDP checksum is zeroed (none) so that the frame stays valid.
func forceIPv4(data []byte, proto uint8, src, dst uint32, dport uint16) []byte {
	f := append([]byte(nil), data...)
	binary.BigEndian.PutUint16(f[12:], packet.EtherTypeIPv4)
	h := packet.IPv4(f[packet.EthernetLen:])
	h[0] = 0x45
	h.SetTotalLen(len(f) - packet.EthernetLen)
	h.SetFlagsFrag(0)
	h.SetTTL(64)
	h.SetProtocol(proto)
	binary.BigEndian.PutUint32(f[26:], src)
	binary.BigEndian.PutUint32(f[30:], dst)
	binary.BigEndian.PutUint16(f[36:], dport)
	if proto == packet.ProtoUDP {
		binary.BigEndian.PutUint16(f[38:], uint16(len(f)-packet.EthernetLen-packet.IPv4MinLen))
		binary.BigEndian.PutUint16(f[40:], 0)
	}
	h.SetChecksum(0)
	h.SetChecksum(h.ComputeChecksum())
	return f
}

// FuzzNATGatewayGraph feeds random frames through configs/nat-gateway.toml
// (FastTrack, Conntrack, DNAT, SNAT, routing, ARP) from both sides, with
// the next hops resolved so that flows are learned and fast-tracked: each
// input also becomes a UDP frame to the DNAT'd port and a TCP frame (with
// whatever flags the input holds) to the DNAT'd HTTP port, each sent three
// times so that the fast path sees them, and a frame from the inside host
// back out. Nothing may panic and every buffer must come back to its pool.
func FuzzNATGatewayGraph(f *testing.F) {
	graph := natGatewayOnMem(f)
	seed := make([]byte, 64)
	binary.BigEndian.PutUint16(seed[34:], 40000)
	f.Add(seed)
	tcp := make([]byte, 74)
	binary.BigEndian.PutUint16(tcp[34:], 40001)
	tcp[47] = 0x10 // ACK
	tcp[46] = 0x50 // data offset 5
	f.Add(tcp)
	f.Add([]byte{})
	f.Add(make([]byte, 13))
	const (
		pub    = 203<<24 | 113<<8 | 1 // 203.0.113.1
		client = 198<<24 | 51<<16 | 100<<8 | 7
		inside = 192<<24 | 168<<16 | 1<<8 | 10
	)
	f.Fuzz(func(t *testing.T, data []byte) {
		if len(data) > 1500 {
			data = data[:1500]
		}
		wan := [][]byte{arpReply(packet.MAC{2, 0, 0, 0, 0, 2}, "203.0.113.2", "203.0.113.1"), data}
		lan := append(lanWithARPReply(), data)
		if len(data) >= 54 {
			u := forceIPv4(data, packet.ProtoUDP, client, pub, 5000)
			c := forceIPv4(data, packet.ProtoTCP, client, pub, 8080)
			wan = append(wan, u, u, u, c, c, c)
			back := forceIPv4(data, packet.ProtoUDP, inside, client, 40000)
			binary.BigEndian.PutUint16(back[34:], 5000)
			lan = append(lan, back, back, back)
		}
		l, w := runMem2(t, graph, lan, wan)
		if n := l.pool.Outstanding(); n != 0 {
			t.Fatalf("lan pool: %d buffers not returned", n)
		}
		if n := w.pool.Outstanding(); n != 0 {
			t.Fatalf("wan pool: %d buffers not returned", n)
		}
	})
}

// TestNATGatewayOnMemFastTracks: the fuzz target's graph and frames do
// reach the fast path — the UDP frames to the DNAT'd port are
// fast-tracked after the first two and leave on the LAN to the inside host
// — so the fuzzer explores FastTrack's hit path, not only the slow path.
func TestNATGatewayOnMemFastTracks(t *testing.T) {
	data := make([]byte, 64)
	binary.BigEndian.PutUint16(data[34:], 40000)
	u := forceIPv4(data, packet.ProtoUDP, 198<<24|51<<16|100<<8|7, 203<<24|113<<8|1, 5000)
	memMu.Lock()
	memInput["lan"] = lanWithARPReply()
	memInput["wan"] = [][]byte{arpReply(packet.MAC{2, 0, 0, 0, 0, 2}, "203.0.113.2", "203.0.113.1"), u, u, u, u, u}
	memMu.Unlock()
	g, err := pipeline.Parse("nat-gateway-mem.toml", natGatewayOnMem(t))
	if err != nil {
		t.Fatal(err)
	}
	r := runToEnd(t, g, pipeline.Options{NoPin: true, Workers: 1})
	fast := r.Snapshot().CounterSum("fasttracked packets", nil)
	memMu.Lock()
	lan := memDevices["lan"]
	memMu.Unlock()
	var toInside int
	for _, f := range lan.sent {
		if len(f) >= 34 && binary.BigEndian.Uint32(f[30:]) == 192<<24|168<<16|1<<8|10 {
			toInside++
		}
	}
	t.Logf("fasttracked %d, %d frames reached the inside host", fast, toInside)
	if fast < 2 || toInside != 5 {
		for _, e := range r.Snapshot().Elements {
			t.Logf("%s: %d packets, counters %v", e.Element, e.Packets, e.Counters)
		}
		t.Fatalf("fasttracked %d packets (want ≥ 2 of the last 3), %d of 5 reached 192.168.1.10", fast, toInside)
	}
}

// TestHostileRouterFiles: the hostile variants of router.toml that once
// hung forwarder check or took gigabytes are refused through Load — with
// the real elements — within 3 s and a memory bound, at the right line,
// with a short message. The files are generated (some are tens of MB).
func TestHostileRouterFiles(t *testing.T) {
	src, err := os.ReadFile("router.toml")
	if err != nil {
		t.Fatal(err)
	}
	base := string(src)
	routesRE := regexp.MustCompile(`(?s)routes = \[.*?\n\]\n`)
	if !routesRE.MatchString(base) || !strings.Contains(base, "[graph]") {
		t.Fatal("router.toml: no routes list or [graph]")
	}
	withRoutes := func(entries string) string { return routesRE.ReplaceAllLiteralString(base, entries) }
	withRules := func(n int) string {
		var b strings.Builder
		b.WriteString("[elements.c]\ntype = \"Classifier\"\nrules = [\n")
		for i := range n {
			fmt.Fprintf(&b, "  \"udp and dst port %d\",\n", i+1)
		}
		b.WriteString("]\n\n[graph]")
		return strings.Replace(base, "[graph]", b.String(), 1)
	}
	routes := func(n, bad int) string {
		var b strings.Builder
		b.WriteString("routes = [\n")
		for i := range n {
			if i == bad {
				b.WriteString("  \"10.300.0.0/16 out 1\",\n")
				continue
			}
			fmt.Fprintf(&b, "  \"10.%d.%d.%d/32 out 1\",\n", i>>16&255, i>>8&255, i&255)
		}
		b.WriteString("]\n")
		return withRoutes(b.String())
	}
	routesLine := strings.Count(base[:strings.Index(base, "routes = [")], "\n") + 1
	macLine := strings.Count(base[:strings.Index(base, "mac       =")], "\n") + 1
	mac10MB := strings.Replace(base, `mac       = "02:00:00:00:01:01"`, `mac = "`+strings.Repeat("a", 10<<20)+`"`, 1)
	for _, tc := range []struct {
		name, src string
		want      string // the only error, after "FILE:"
		alloc     uint64
	}{
		{"routes_file /dev/zero", withRoutes("routes_file = \"/dev/zero\"\n"),
			fmt.Sprintf(`%d: element "rt" (IPLookup): key "routes_file": /dev/zero: not a regular file but a character device`, routesLine), 32 << 20},
		{"10 MB mac", mac10MB, fmt.Sprintf("1: file is %d bytes: at most 4194304 (MaxFileSize)", len(mac10MB)), 32 << 20},
		{"60 KB mac", strings.Replace(base, `mac       = "02:00:00:00:01:01"`, `mac = "`+strings.Repeat("a", 60000)+`"`, 1),
			fmt.Sprintf(`%d: device "lan" (pcap): key "mac": bad MAC "%s"... (60000 bytes): want aa:bb:cc:dd:ee:ff`, macLine, strings.Repeat("a", 80)), 32 << 20},
		{"10000 Classifier rules", withRules(10000),
			fmt.Sprintf(`%d: element "c" (Classifier): key "rules": 10000 rules: at most 1024 per Classifier`, strings.Count(base[:strings.Index(base, "[graph]")], "\n")+3), 64 << 20},
		{"bad route 10001 of 20000", routes(20000, 10000),
			fmt.Sprintf(`%d: element "rt" (IPLookup): key "routes": entry 10001 "10.300.0.0/16 out 1": bad prefix`, routesLine+10001), 128 << 20},
		{"2M routes, 50 MB", routes(2_000_000, 1_000_000),
			"1: file is ", 32 << 20},
		{"inline tables 3000 deep", strings.Replace(base, "[graph]", "x = "+strings.Repeat("{a=", 3000)+"1"+strings.Repeat("}", 3000)+"\n[graph]", 1),
			fmt.Sprintf("%d: nested more than 32 levels deep (MaxDepth)", strings.Count(base[:strings.Index(base, "[graph]")], "\n")+1), 32 << 20},
	} {
		t.Run(tc.name, func(t *testing.T) {
			file := filepath.Join(t.TempDir(), "h.toml")
			if err := os.WriteFile(file, []byte(tc.src), 0o600); err != nil {
				t.Fatal(err)
			}
			type result struct {
				err   error
				alloc uint64
			}
			done := make(chan result, 1)
			start := time.Now()
			go func() {
				var before, after runtime.MemStats
				runtime.GC()
				runtime.ReadMemStats(&before)
				_, err := pipeline.Load(file)
				runtime.ReadMemStats(&after)
				done <- result{err, after.TotalAlloc - before.TotalAlloc}
			}()
			var r result
			select {
			case r = <-done:
			case <-time.After(3 * time.Second):
				t.Fatalf("Load of %d bytes still running after 3 s", len(tc.src))
			}
			t.Logf("%d bytes: %v, %d MB allocated", len(tc.src), time.Since(start).Round(time.Millisecond), r.alloc>>20)
			if r.alloc > tc.alloc {
				t.Errorf("allocated %d MB, want at most %d MB", r.alloc>>20, tc.alloc>>20)
			}
			if r.err == nil {
				t.Fatal("loaded")
			}
			msg := r.err.Error()
			if !strings.HasPrefix(msg, file+":"+tc.want) || strings.Contains(msg, "\n") || len(msg) > len(file)+300 {
				t.Fatalf("error:\n%.1000s\nwant the only error: %s:%s...", msg, file, tc.want)
			}
		})
	}
}
