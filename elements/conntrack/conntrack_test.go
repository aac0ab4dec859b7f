package conntrack_test

import (
	"encoding/binary"
	"math/rand/v2"
	"testing"
	"time"
	"unsafe"

	"github.com/junction-dataplane/junction/elements"
	"github.com/junction-dataplane/junction/elements/conntrack"
	ct "github.com/junction-dataplane/junction/elements/conntrack/cttest"
	"github.com/junction-dataplane/junction/elements/elementtest"
	"github.com/junction-dataplane/junction/packet"
)

func TestConnSize(t *testing.T) {
	if s := unsafe.Sizeof(conntrack.Conn{}); s > 128 {
		t.Fatalf("Conn is %d bytes, want ≤ 128", s)
	}
	// A flow-cache entry is one cache line, and its key is laid out as
	// CacheMatch reads it: RawKey.A, then B's low five bytes.
	var e conntrack.CacheEntry
	if s := unsafe.Sizeof(e); s != 64 {
		t.Fatalf("CacheEntry is %d bytes, want 64", s)
	}
	if unsafe.Offsetof(e.Addrs) != 0 || unsafe.Offsetof(e.Ports) != 8 || unsafe.Offsetof(e.Proto) != 12 {
		t.Fatal("CacheEntry's key is not laid out as CacheMatch reads it")
	}
	k := conntrack.Tuple{Src: 0x0a000001, Dst: 0xc0a80102, Sport: 1234, Dport: 80, Proto: packet.ProtoTCP}
	r := conntrack.RawKeyOf(&k)
	e.Addrs, e.Ports, e.Proto, e.Out, e.Bits = r.A, uint32(r.B), uint8(r.B>>32), 3, 0xff
	if !conntrack.CacheMatch(&e, &r) {
		t.Error("CacheMatch misses the entry of its own key")
	}
	for _, o := range []conntrack.Tuple{
		{Src: 0x0a000002, Dst: k.Dst, Sport: k.Sport, Dport: k.Dport, Proto: k.Proto},
		{Src: k.Src, Dst: k.Dst, Sport: k.Sport, Dport: 81, Proto: k.Proto},
		{Src: k.Src, Dst: k.Dst, Sport: k.Sport, Dport: k.Dport, Proto: packet.ProtoUDP},
	} {
		if ro := conntrack.RawKeyOf(&o); conntrack.CacheMatch(&e, &ro) {
			t.Errorf("CacheMatch takes %+v for %+v", o, k)
		}
	}
	var back conntrack.Tuple
	if r.ToTuple(&back); back != k {
		t.Errorf("RawKeyOf then ToTuple gives %+v, want %+v", back, k)
	}
	// The raw key is the frame's bytes: addresses at IPv4 offset 12,
	// ports at transport offset 0, read little-endian.
	var f [8]byte
	binary.BigEndian.PutUint32(f[0:], k.Src)
	binary.BigEndian.PutUint32(f[4:], k.Dst)
	if binary.LittleEndian.Uint64(f[:]) != r.A {
		t.Errorf("RawKey.A %#x, frame bytes read little-endian %#x", r.A, binary.LittleEndian.Uint64(f[:]))
	}
	binary.BigEndian.PutUint16(f[0:], k.Sport)
	binary.BigEndian.PutUint16(f[2:], k.Dport)
	if uint32(r.B) != binary.LittleEndian.Uint32(f[:4]) || r.B>>32 != uint64(k.Proto) {
		t.Errorf("RawKey.B %#x does not hold the frame's ports and protocol %d", r.B, k.Proto)
	}
}

// clock is a hand-moved clock.
type clock struct{ now int64 }

func (c *clock) read() int64         { return c.now }
func (c *clock) add(d time.Duration) { c.now += int64(d) }
func newCT(t *testing.T, capacity int, o *elementtest.Options, timeouts ...string) (*elementtest.Harness, *conntrack.Table, *clock) {
	cfg := &conntrack.Config{Capacity: capacity, Timeouts: timeouts}
	h := elementtest.New(t, "Conntrack", cfg, o)
	tb := h.Element.(*conntrack.Conntrack).Table()
	c := &clock{now: 1e12}
	tb.SetClock(c.read)
	return h, tb, c
}

// push sends one frame and returns its state ("invalid" when it left on
// output 1, "dropped" when dropped) and the annotation.
func push(t *testing.T, h *elementtest.Harness, f []byte) (uint8, packet.Ct) {
	t.Helper()
	n0, n1 := len(h.Outs[0].Pkts), len(h.Outs[1].Pkts)
	h.Push(0, f)
	switch {
	case len(h.Outs[0].Pkts) > n0:
		p := h.Outs[0].Pkts[n0]
		return p.Ct.State, p.Ct
	case len(h.Outs[1].Pkts) > n1:
		return h.Outs[1].Pkts[n1].Ct.State, h.Outs[1].Pkts[n1].Ct
	}
	return 0xff, packet.Ct{}
}

const (
	cl = "192.168.1.10"
	sv = "198.51.100.7"
)

func tcp(flags uint8, reply bool) []byte {
	if reply {
		return ct.Frame(ct.F{Proto: "tcp", Src: sv, Dst: cl, Sport: 80, Dport: 40000, Flags: flags})
	}
	return ct.Frame(ct.F{Proto: "tcp", Src: cl, Dst: sv, Sport: 40000, Dport: 80, Flags: flags})
}

func TestTCPStateMachine(t *testing.T) {
	type step struct {
		flags uint8
		reply bool
		state uint8  // annotation
		tcp   string // TCP state after
	}
	const (
		N, E, I = packet.CtNew, packet.CtEstablished, packet.CtInvalid
	)
	tests := []struct {
		name  string
		steps []step
	}{
		{"handshake and close", []step{
			{ct.SYN, false, N, "SYN_SENT"},
			{ct.SYN | ct.ACK, true, E, "SYN_RECV"},
			{ct.ACK, false, E, "ESTABLISHED"},
			{ct.ACK | ct.PSH, true, E, "ESTABLISHED"},
			{ct.FIN | ct.ACK, false, E, "FIN_WAIT"},
			{ct.ACK, true, E, "CLOSE_WAIT"},
			{ct.FIN | ct.ACK, true, E, "LAST_ACK"},
			{ct.ACK, false, E, "TIME_WAIT"},
		}},
		{"reset", []step{
			{ct.SYN, false, N, "SYN_SENT"},
			{ct.RST | ct.ACK, true, E, "CLOSE"},
		}},
		{"synack without syn", []step{{ct.SYN | ct.ACK, false, I, ""}}},
		{"fin opens nothing", []step{{ct.FIN | ct.ACK, false, I, ""}}},
		{"syn fin", []step{{ct.SYN | ct.FIN, false, I, ""}}},
		{"null flags", []step{{0, false, I, ""}}},
		{"xmas", []step{{ct.FIN | ct.SYN | ct.RST | ct.PSH | ct.ACK | ct.URG, false, I, ""}}},
		{"mid-stream pickup", []step{
			{ct.ACK, false, N, "ESTABLISHED"},
			{ct.ACK, true, E, "ESTABLISHED"},
		}},
		{"syn retransmit then ack from reply before synack", []step{
			{ct.SYN, false, N, "SYN_SENT"},
			{ct.SYN, false, N, "SYN_SENT"},
			{ct.ACK, true, E, "SYN_SENT"}, // ignored
			{ct.SYN | ct.ACK, true, E, "SYN_RECV"},
		}},
		{"synack in established is ignored", []step{
			{ct.SYN, false, N, "SYN_SENT"},
			{ct.SYN | ct.ACK, true, E, "SYN_RECV"},
			{ct.ACK, false, E, "ESTABLISHED"},
			{ct.SYN | ct.ACK, true, E, "ESTABLISHED"},
		}},
		{"synack from originator in syn_sent", []step{
			{ct.SYN, false, N, "SYN_SENT"},
			{ct.SYN | ct.ACK, false, I, "SYN_SENT"},
		}},
		{"simultaneous open", []step{
			{ct.SYN, false, N, "SYN_SENT"},
			{ct.SYN, true, E, "SYN_SENT2"},
			{ct.SYN | ct.ACK, true, E, "SYN_RECV"},
		}},
		{"reopen after close", []step{
			{ct.SYN, false, N, "SYN_SENT"},
			{ct.RST, true, E, "CLOSE"},
			{ct.SYN, false, E, "SYN_SENT"},
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			h, tb, _ := newCT(t, 16, nil)
			for i, s := range tc.steps {
				st, a := push(t, h, tcp(s.flags, s.reply))
				if st != s.state {
					t.Fatalf("step %d: ct state %d, want %d", i, st, s.state)
				}
				k := conntrack.Tuple{Src: 0xc0a8010a, Dst: 0xc6336407, Sport: 40000, Dport: 80, Proto: 6}
				idx, _, ok := tb.Lookup(&k)
				if s.tcp == "" {
					if ok {
						t.Fatalf("step %d: invalid packet created a flow", i)
					}
					continue
				}
				if !ok {
					t.Fatalf("step %d: no flow", i)
				}
				if got := conntrack.TCPStateName(tb.Conn(idx).State); got != s.tcp {
					t.Fatalf("step %d: TCP state %s, want %s", i, got, s.tcp)
				}
				if s.state != packet.CtInvalid && (a.Flow != idx || a.Dir != map[bool]uint8{false: 0, true: 1}[s.reply]) {
					t.Fatalf("step %d: annotation %+v, flow %d", i, a, idx)
				}
			}
			h.CheckNoLeak()
		})
	}
}

func TestAssuredAndTimeouts(t *testing.T) {
	h, tb, clk := newCT(t, 16, nil, "udp=10s", "udp_stream=60s")
	out := ct.Frame(ct.F{Proto: "udp", Src: cl, Dst: sv, Sport: 5000, Dport: 53})
	back := ct.Frame(ct.F{Proto: "udp", Src: sv, Dst: cl, Sport: 53, Dport: 5000})
	if st, _ := push(t, h, out); st != packet.CtNew {
		t.Fatalf("first: %d", st)
	}
	clk.add(9 * time.Second)
	if st, _ := push(t, h, out); st != packet.CtNew {
		t.Fatalf("within timeout: %d", st)
	}
	clk.add(11 * time.Second) // unreplied timeout 10s passed
	if st, a := push(t, h, out); st != packet.CtNew || !(tb.Conn(a.Flow).Packets[0] == 1) {
		t.Fatalf("after expiry: state %d, packets %d (want a fresh flow)", st, tb.Conn(a.Flow).Packets[0])
	}
	if h.Counter("expired") != 1 {
		t.Errorf("expired = %d", h.Counter("expired"))
	}
	st, a := push(t, h, back)
	if st != packet.CtEstablished || a.Dir != 1 || !tb.Conn(a.Flow).Has(conntrack.FlagAssured) {
		t.Fatalf("reply: state %d dir %d flags %#x", st, a.Dir, tb.Conn(a.Flow).Flags)
	}
	clk.add(50 * time.Second) // stream timeout is 60s
	if st, _ := push(t, h, out); st != packet.CtEstablished {
		t.Fatalf("replied flow within stream timeout: %d", st)
	}
	clk.add(61 * time.Second)
	h.Element.(elements.Ticker).Tick(0) // the sweep removes it
	if tb.Len() != 0 {
		t.Fatalf("after sweep: %d flows", tb.Len())
	}
	// ICMP echo.
	req := ct.Frame(ct.F{Proto: "icmp", Src: cl, Dst: sv, ID: 77})
	rep := ct.Frame(ct.F{Proto: "icmpreply", Src: sv, Dst: cl, ID: 77})
	if st, _ := push(t, h, rep); st != packet.CtInvalid {
		t.Errorf("echo reply without request: %d", st)
	}
	if st, _ := push(t, h, req); st != packet.CtNew {
		t.Errorf("echo request: %d", st)
	}
	if st, a := push(t, h, rep); st != packet.CtEstablished || a.Dir != 1 {
		t.Errorf("echo reply: %d dir %d", st, a.Dir)
	}
	clk.add(31 * time.Second)
	if st, _ := push(t, h, rep); st != packet.CtInvalid {
		t.Errorf("echo reply after icmp timeout: %d", st)
	}
	h.CheckNoLeak()
}

func TestTCPTimeouts(t *testing.T) {
	h, tb, clk := newCT(t, 16, nil, "tcp_syn_sent=5s")
	push(t, h, tcp(ct.SYN, false))
	clk.add(6 * time.Second)
	// The SYN_SENT flow expired: a reply SYN/ACK finds nothing.
	if st, _ := push(t, h, tcp(ct.SYN|ct.ACK, true)); st != packet.CtInvalid {
		t.Fatalf("synack after syn_sent timeout: %d", st)
	}
	push(t, h, tcp(ct.SYN, false))
	push(t, h, tcp(ct.SYN|ct.ACK, true))
	push(t, h, tcp(ct.ACK, false))
	clk.add(4 * 24 * time.Hour) // established: 5 days
	if st, _ := push(t, h, tcp(ct.ACK, true)); st != packet.CtEstablished {
		t.Fatalf("established after 4 days: %d", st)
	}
	if tb.Len() != 1 {
		t.Fatalf("%d flows", tb.Len())
	}
}

// TestEviction fills a small table: the oldest unassured flows go first,
// assured flows are never evicted, and when only assured flows are left a
// new flow is refused ("table full").
func TestEviction(t *testing.T) {
	h, tb, clk := newCT(t, 4, nil)
	udp := func(i int, reply bool) []byte {
		if reply {
			return ct.Frame(ct.F{Proto: "udp", Src: sv, Dst: cl, Sport: 53, Dport: uint16(1000 + i)})
		}
		return ct.Frame(ct.F{Proto: "udp", Src: cl, Dst: sv, Sport: uint16(1000 + i), Dport: 53})
	}
	key := func(i int) conntrack.Tuple {
		return conntrack.Tuple{Src: 0xc0a8010a, Dst: 0xc6336407, Sport: uint16(1000 + i), Dport: 53, Proto: 17}
	}
	// Flows 0 and 1 assured; 2 and 3 unassured.
	for i := range 4 {
		push(t, h, udp(i, false))
		clk.add(time.Millisecond)
	}
	push(t, h, udp(0, true))
	push(t, h, udp(1, true))
	// Flow 4 evicts flow 2 (oldest unassured), flow 5 evicts flow 3.
	for i, gone := range []int{2, 3} {
		if st, _ := push(t, h, udp(4+i, false)); st != packet.CtNew {
			t.Fatalf("flow %d: %d", 4+i, st)
		}
		k := key(gone)
		if tb.InUse(&k) {
			t.Fatalf("flow %d not evicted", gone)
		}
	}
	if h.Counter("evicted") != 2 {
		t.Errorf("evicted = %d", h.Counter("evicted"))
	}
	// Make 4 and 5 assured: now every flow is assured and live.
	push(t, h, udp(4, true))
	push(t, h, udp(5, true))
	if st, _ := push(t, h, udp(9, false)); st != 0xff {
		t.Fatalf("new flow in a table of assured flows: state %d, want dropped", st)
	}
	if h.Counter("table full") != 1 {
		t.Errorf("table full = %d", h.Counter("table full"))
	}
	for _, i := range []int{0, 1, 4, 5} {
		if st, _ := push(t, h, udp(i, false)); st != packet.CtEstablished {
			t.Errorf("assured flow %d: %d", i, st)
		}
	}
	// Once an assured flow expires, its slot can be reused.
	clk.add(121 * time.Second)
	push(t, h, udp(0, false)) // flow 0 expired: recreated (evicting an expired one)
	if st, _ := push(t, h, udp(9, false)); st != packet.CtNew {
		t.Errorf("after expiry: %d", st)
	}
	h.CheckNoLeak()
}

func TestRelatedAndInvalid(t *testing.T) {
	h, _, _ := newCT(t, 64, nil)
	syn := tcp(ct.SYN, false)
	push(t, h, syn)
	udpOut := ct.Frame(ct.F{Proto: "udp", Src: cl, Dst: sv, Sport: 5000, Dport: 53})
	push(t, h, udpOut)
	frag := ct.Frame(ct.F{Proto: "udp", Src: cl, Dst: sv, Sport: 5001, Dport: 53})
	frag[14+6] = 0x20 // MF
	unknown := ct.Frame(ct.F{Proto: "udp", Src: cl, Dst: sv, Sport: 9, Dport: 9})
	badSum := ct.ICMPError(3, 3, "203.0.113.9", cl, udpOut, 0)
	badSum[14+20+2] ^= 1
	short := ct.ICMPError(3, 3, "203.0.113.9", cl, udpOut, 24)
	notIP := append([]byte(nil), udpOut...)
	notIP[12], notIP[13] = 0x08, 0x06
	ipv4v6 := append([]byte(nil), udpOut...)
	ipv4v6[14] = 0x65
	ts := ct.Frame(ct.F{Proto: "icmp", Src: cl, Dst: sv, ID: 1})
	ts[34] = 13 // timestamp request
	tests := []struct {
		name  string
		frame []byte
		state uint8
		count string
	}{
		{"icmp error about tcp flow", ct.ICMPError(3, 1, "203.0.113.9", cl, syn, 0), packet.CtRelated, "related"},
		{"icmp error about udp flow", ct.ICMPError(11, 0, "203.0.113.9", cl, udpOut, 0), packet.CtRelated, "related"},
		{"icmp error about unknown flow", ct.ICMPError(3, 3, "203.0.113.9", cl, unknown, 0), packet.CtInvalid, "invalid: icmp"},
		{"icmp error with bad checksum", badSum, packet.CtInvalid, "invalid: icmp"},
		{"icmp error quoting too little", short, packet.CtInvalid, "invalid: icmp"},
		{"fragment", frag, packet.CtInvalid, "invalid: fragment"},
		{"truncated", udpOut[:30], packet.CtInvalid, "invalid: malformed"},
		{"bad version", ipv4v6, packet.CtInvalid, "invalid: malformed"},
		{"tcp without full header", tcp(ct.ACK, false)[:14+20+12], packet.CtInvalid, "invalid: malformed"},
		{"icmp timestamp", ts, packet.CtInvalid, "invalid: icmp"},
		{"arp", notIP, packet.CtUntracked, "untracked"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c0 := h.Counter(tc.count)
			st, a := push(t, h, tc.frame)
			if st != tc.state {
				t.Fatalf("state %d, want %d", st, tc.state)
			}
			if tc.state == packet.CtRelated && a.Dir != 1 {
				t.Errorf("related dir %d, want 1 (the error travels back)", a.Dir)
			}
			if h.Counter(tc.count) != c0+1 {
				t.Errorf("%q did not move", tc.count)
			}
		})
	}
	h.CheckNoLeak()
}

func TestInvalidUnconnectedDropped(t *testing.T) {
	h, _, _ := newCT(t, 8, &elementtest.Options{Unconnected: []int{1}})
	h.Push(0, tcp(0, false), tcp(ct.SYN, false), nil)
	if len(h.Outs[0].Pkts) != 2 || h.Counter(elements.UnconnectedReason(1)) != 1 {
		t.Fatalf("out0 %d, unconnected drops %d", len(h.Outs[0].Pkts), h.Counter(elements.UnconnectedReason(1)))
	}
	if h.Counter("untracked") != 1 { // the empty frame is not IPv4
		t.Errorf("untracked = %d", h.Counter("untracked"))
	}
	h.CheckNoLeak()
}

// TestFlood sends 1M one-way UDP flows from random sources through a
// 65536-flow table while an established TCP flow exchanges packets: the
// TCP flow is never evicted and every one of its packets is tracked as
// established.
func TestFlood(t *testing.T) {
	n := 1 << 20
	if testing.Short() {
		n = 1 << 17
	}
	h, tb, clk := newCT(t, 65536, &elementtest.Options{Sink: true, PoolSize: 256})
	// The established flow, through the recorder-less sink harness: use a
	// second look-up to check it.
	pushOne := func(f []byte) {
		p := h.Packet(f)
		h.PushBatch(0, p)
	}
	pushOne(tcp(ct.SYN, false))
	pushOne(tcp(ct.SYN|ct.ACK, true))
	pushOne(tcp(ct.ACK, false))
	k := conntrack.Tuple{Src: 0xc0a8010a, Dst: 0xc6336407, Sport: 40000, Dport: 80, Proto: 6}
	idx, _, ok := tb.Lookup(&k)
	if !ok || !tb.Conn(idx).Has(conntrack.FlagAssured) {
		t.Fatal("TCP flow not assured")
	}
	tag := tb.Conn(idx).Tag
	flood := ct.Frame(ct.F{Proto: "udp", Src: "10.0.0.1", Dst: sv, Sport: 1, Dport: 9})
	est := [2][]byte{tcp(ct.ACK|ct.PSH, false), tcp(ct.ACK, true)}
	rng := rand.New(rand.NewPCG(7, 8))
	b := packet.NewBatch(64)
	el := h.Element
	for i := 0; i < n; i += 63 {
		b.Reset()
		for j := 0; j < 63; j++ {
			p := h.Pool.Get()
			p.SetFrame(flood)
			src := rng.Uint32()
			d := p.Data[14+12:]
			d[0], d[1], d[2], d[3] = byte(src>>24), byte(src>>16), byte(src>>8), byte(src)
			b.Add(p)
		}
		p := h.Pool.Get()
		p.SetFrame(est[(i/63)&1])
		b.Add(p)
		el.Push(0, b)
		clk.add(time.Microsecond)
	}
	j, _, ok := tb.Lookup(&k)
	if !ok || j != idx || tb.Conn(j).Tag != tag {
		t.Fatal("the established flow was evicted")
	}
	c := tb.Conn(idx)
	want := uint32(n/63/2 + 1)
	if c.Packets[0] < want || c.Packets[1] < want-1 || conntrack.TCPStateName(c.State) != "ESTABLISHED" {
		t.Fatalf("established flow: packets %v, state %s", c.Packets, conntrack.TCPStateName(c.State))
	}
	if e := h.Counter("evicted"); e < uint64(n)-65536-100 {
		t.Errorf("evicted = %d for %d flood flows", e, n)
	}
	if h.Counter("table full") != 0 {
		t.Errorf("table full = %d: a new flow was refused while unassured ones could go", h.Counter("table full"))
	}
}

func frames() [][]byte {
	var fs [][]byte
	for i := range 64 {
		fs = append(fs, ct.Frame(ct.F{Proto: "udp", Src: cl, Dst: sv, Sport: uint16(2000 + i), Dport: 53}))
	}
	return fs
}

func TestAllocs(t *testing.T) {
	h, _, _ := newCT(t, 1024, &elementtest.Options{Sink: true})
	fs := frames()
	fs = append(fs, tcp(0, false), nil, ct.ICMPError(3, 3, "1.2.3.4", cl, fs[0], 0))
	if a := h.AllocsPerBatch(100, fs...); a != 0 {
		t.Fatalf("%v allocs per batch", a)
	}
}

func BenchmarkConntrack(b *testing.B) {
	for _, flows := range []int{64, 10000, 1000000} {
		b.Run(map[int]string{64: "flows=64", 10000: "flows=10k", 1000000: "flows=1M"}[flows], func(b *testing.B) {
			cfg := &conntrack.Config{Capacity: flows + flows/4}
			h := elementtest.New(b, "Conntrack", cfg, &elementtest.Options{Sink: true})
			base := ct.Frame(ct.F{Proto: "udp", Src: "10.0.0.1", Dst: sv, Sport: 1000, Dport: 9})
			fs := make([][]byte, flows)
			for i := range fs {
				f := append([]byte(nil), base...)
				f[14+12+2], f[14+12+3] = byte(i>>8), byte(i)
				f[14+12+1] = byte(i >> 16)
				fs[i] = f
			}
			// Warm: create every flow.
			for i := 0; i < flows; i += 64 {
				h.AllocsPerBatch(1, fs[i:min(i+64, flows)]...)
			}
			rng := rand.New(rand.NewPCG(1, 1))
			perm := make([][]byte, 64*1024)
			for i := range perm {
				perm[i] = fs[rng.IntN(flows)]
			}
			benchRotating(b, h, perm)
		})
	}
}

// benchRotating is elementtest's Bench loop walking through all of frames
// (Bench reuses the first batch's worth), so that many flows are touched.
func benchRotating(b *testing.B, h *elementtest.Harness, frames [][]byte) {
	batch := packet.NewBatch(64)
	b.ReportAllocs()
	b.ResetTimer()
	pkts, off := 0, 0
	for b.Loop() {
		batch.Reset()
		for range 64 {
			p := h.Pool.Get()
			p.SetFrame(frames[off])
			off++
			if off == len(frames) {
				off = 0
			}
			batch.Add(p)
		}
		pkts += 64
		h.Element.Push(0, batch)
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(pkts), "ns/pkt")
}

// The sweep keeps its pace per second when ticks come further apart (a
// worker asleep past its tick): a Tick 10 ms after the last sweeps ten
// slices, not one.
func TestSweepPacedByTime(t *testing.T) {
	h, tb, clk := newCT(t, 8192, &elementtest.Options{Sink: true, PoolSize: 256})
	for i := range 4000 {
		h.Push(0, ct.Frame(ct.F{Proto: "udp", Src: cl, Dst: sv, Sport: uint16(1024 + i), Dport: 53}))
	}
	if tb.Len() != 4000 {
		t.Fatalf("%d flows, want 4000", tb.Len())
	}
	clk.add(time.Hour) // every flow expired
	tk := h.Element.(elements.TickScheduler)
	if next := tk.NextTick(0); next != elements.NoWake {
		t.Errorf("NextTick %d, want NoWake (the sweep is paced by time)", next)
	}
	at := int64(1e12)
	tk.Tick(at)
	one := 4000 - tb.Len()
	tk.Tick(at + int64(time.Millisecond))
	two := 4000 - tb.Len() - one
	tk.Tick(at + int64(11*time.Millisecond))
	ten := 4000 - tb.Len() - one - two
	t.Logf("expired by ticks 1 ms apart: %d, %d; then 10 ms later: %d", one, two, ten)
	if one == 0 || two != one || ten < 9*one {
		t.Errorf("a tick 10 ms after the last swept %d flows, one 1 ms after %d: want ten times as many", ten, two)
	}
}
