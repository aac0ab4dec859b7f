package benchmarks

import (
	"encoding/binary"
	"fmt"
	"os"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/junction-dataplane/junction/conf"
	"github.com/junction-dataplane/junction/drivers"
	"github.com/junction-dataplane/junction/elements/conntrack"
	"github.com/junction-dataplane/junction/internal/cputime"
	"github.com/junction-dataplane/junction/packet"
	"github.com/junction-dataplane/junction/pipeline"
)

// Connections per second, as CSIT measures NAT44-ED: a NAT gateway graph
// (inside lan, outside wan, one worker) opens connections from inside
// clients to outside servers, each through SNAT, and the replies come back
// in on the WAN side to the translated tuple. The devices are the "cps"
// driver below, whose frames a harness writes and reads: it builds each
// reply from what the NAT did to the packet before it (the translated
// source address and port seen leaving on wan), as a server would.
//
// UDP: one packet per connection (inside → outside), each a new flow.
// TCP: SYN, SYN/ACK, ACK, FIN/ACK, ACK, FIN/ACK, ACK per connection, one
// packet of each connection in flight at a time, cpsWindow connections
// open at once.
//
// The table is kept at a fill level: before measuring, filler flows (UDP
// from 172.16.0.0/12, one packet each: unassured) take that share of the
// capacity. At 10% and 90% an episode opens no more connections than fit
// in the free part, and afterwards (not timed) the episode's flows are
// deleted, so nothing is evicted. At 100% the table is full and every new
// flow evicts the oldest unassured one (fillers first); after a TCP
// episode (whose closed connections are assured) the episode's flows are
// deleted and as many fillers sent again (not timed).

// cpsGraph is the NAT gateway graph of the CPS harness on the cps driver;
// fast adds FastTrack and FastTrackLearn as configs/nat-gateway.toml has
// them.
func cpsGraph(harness string, capacity int, fast bool) []byte {
	in := []string{`"FromDevice(lan) -> ct",`, `"FromDevice(wan) -> ct",`}
	lanOut, wanOut := `-> ToDevice(lan)"`, `-> ToDevice(wan)"`
	var ft []string
	if fast {
		in = []string{
			`"FromDevice(lan) -> lft :: FastTrack(2, either-direction)",`,
			`"FromDevice(wan) -> wft :: FastTrack(2, either-direction)",`,
			`"lft[0] -> ct",`, `"wft[0] -> ct",`,
		}
		ft = []string{`"lft[1] -> ToDevice(lan)",`, `"lft[2] -> ToDevice(wan)",`,
			`"wft[1] -> ToDevice(lan)",`, `"wft[2] -> ToDevice(wan)",`,
			`"ftl[0] -> ToDevice(lan)",`, `"ftl[1] -> ToDevice(wan)",`}
		lanOut, wanOut = `-> [0]ftl :: FastTrackLearn(2)"`, `-> [1]ftl"`
	}
	return fmt.Appendf(nil, `[forwarder]
batch = 64

[devices.lan]
driver    = "cps"
harness   = %[1]q
addresses = ["10.255.255.254/8"]
mac       = "02:00:00:00:01:01"

[devices.wan]
driver    = "cps"
harness   = %[1]q
addresses = ["203.0.113.1/24"]
mac       = "02:00:00:00:02:01"

[elements.rt]
type   = "IPLookup"
routes = ["10.0.0.0/8 out 0", "172.16.0.0/12 out 0", "0.0.0.0/0 via 203.0.113.2 out 1"]

[elements.ct]
type     = "Conntrack"
capacity = %[2]d

[elements.snat]
type = "SNAT"
to   = "203.0.113.1"

[graph]
links = [
  %[3]s
  %[4]s
  "ct -> DNAT(tcp 203.0.113.1:8080 -> 10.0.0.10:80) -> ttl :: DecTTL -> rt",
  "ttl[1] -> Discard",
  "rt[0] -> EtherRewrite(02:00:00:00:01:01, 02:00:00:00:01:02) %[5]s,
  "rt[1] -> snat -> EtherRewrite(02:00:00:00:02:01, 02:00:00:00:02:02) %[6]s,
]
`, harness, capacity, strings.Join(in, "\n  "), strings.Join(ft, "\n  "), lanOut, wanOut)
}

// The harness's addresses.
const (
	cpsPublic  = 203<<24 | 113<<8 | 1      // SNAT's address
	cpsServers = 198<<24 | 51<<16 | 100<<8 // + 0..250: the outside servers
	cpsClients = 10 << 24                  // + n: the inside client of connection n
	cpsFillers = 172<<24 | 16<<16          // + n: the inside host of filler n
)

// cpsFillerBit is set in the number a filler's port and server are drawn
// from, so that fillers and connections do not share tuples.
const cpsFillerBit = 1 << 31

// cpsWindow is how many TCP connections are open at once.
const cpsWindow = 1024

// cpsConn is one TCP connection in flight.
type cpsConn struct {
	n       uint32 // connection number: client address and port
	stage   uint8  // the packet in flight (index into tcpStages)
	pubPort uint16 // the port SNAT gave it
	busy    bool
}

// tcpStages is a connection's packets: direction (0: client → server,
// entering on lan; 1: server → client, entering on wan) and TCP flags.
var tcpStages = [7]struct{ dir, flags uint8 }{
	{0, tcpSYN}, {1, tcpSYN | tcpACK}, {0, tcpACK}, {0, tcpFIN | tcpACK}, {1, tcpACK}, {1, tcpFIN | tcpACK}, {0, tcpACK},
}

const (
	tcpFIN = 0x01
	tcpSYN = 0x02
	tcpACK = 0x10
)

// cpsHarness drives one graph's two cps devices.
type cpsHarness struct {
	tcp     bool
	lan     *cpsDevice
	wan     *cpsDevice
	table   *conntrack.Table // from the first annotated packet transmitted
	mac     [2][12]byte      // the Ethernet header of frames entering lan, wan
	newConn uint32           // next connection number
	fillN   uint32           // next filler number

	// What Receive hands out: udpLeft new UDP flows or fillers; TCP
	// packets queued per input side (conn slot indices).
	udpLeft  int
	filling  bool
	estab    int // > 0: UDP packets of the existing flows [estabFrom, estabFrom+estab) in turn
	estabAt  uint32
	queue    [2][]uint32
	conns    []cpsConn
	free     []uint32
	tcpLeft  int // connections still to open in this episode
	open     int // connections in flight
	done     int // connections (UDP: packets) that completed
	flows    []packet.Ct
	keep     bool // record the flows of this episode for deletion
	badTX    int
	received int
}

var cpsHarnesses sync.Map // name → *cpsHarness

type cpsDriverConfig struct {
	Harness string `toml:"harness"`
}

func init() {
	drivers.Register(drivers.Driver{
		Name:      "cps",
		NewConfig: func() any { return &cpsDriverConfig{} },
		Doc:       conf.Doc{Summary: "benchmarks' connections-per-second harness (test only)"},
		Open: func(cfg any, ctx drivers.OpenContext) (drivers.Device, error) {
			c := cfg.(*cpsDriverConfig)
			v, ok := cpsHarnesses.Load(c.Harness)
			if !ok {
				return nil, fmt.Errorf("cps: no harness %q", c.Harness)
			}
			h := v.(*cpsHarness)
			d := &cpsDevice{h: h, index: ctx.Index, info: drivers.Info{Name: ctx.Name, Driver: "cps", MAC: ctx.MAC, Addresses: ctx.Addresses}}
			switch ctx.Name {
			case "lan":
				h.lan = d
			case "wan":
				d.side = 1
				h.wan = d
			default:
				return nil, fmt.Errorf("cps: device %q: want lan or wan", ctx.Name)
			}
			return d, nil
		},
	})
}

// cpsDevice is one side's device.
type cpsDevice struct {
	h     *cpsHarness
	side  int
	index int
	info  drivers.Info
	pool  *packet.Pool
}

func (d *cpsDevice) RxQueues() int    { return 1 }
func (d *cpsDevice) Drained(int) bool { return false }
func (d *cpsDevice) Flush() error     { return nil }
func (d *cpsDevice) Close() error     { return nil }
func (d *cpsDevice) Info() drivers.Info {
	return d.info
}
func (d *cpsDevice) Stats() []drivers.Counter { return nil }

func (d *cpsDevice) Receive(_ int, b *packet.Batch) int {
	if d.pool == nil {
		d.pool = packet.NewPool(4096)
	}
	n := 0
	for !b.Full() {
		p := d.pool.Get()
		if p == nil {
			break
		}
		if !d.h.next(d.side, p) {
			p.Free()
			break
		}
		p.InDevice = uint16(d.index)
		b.Add(p)
		n++
	}
	d.h.received += n
	return n
}

func (d *cpsDevice) Transmit(_ int, b *packet.Batch) {
	for _, p := range b.Pkts {
		d.h.transmitted(d.side, p)
	}
	b.FreeAll()
}

// next writes the next frame entering side into p, if there is one.
func (h *cpsHarness) next(side int, p *packet.Packet) bool {
	if !h.tcp || h.filling {
		if side != 0 {
			return false
		}
		switch {
		case h.estab > 0:
			i := h.estabAt
			h.estabAt++
			if int(h.estabAt) >= h.estab {
				h.estabAt = 0
			}
			h.putUDP(p, cpsFillers+i, i|cpsFillerBit)
			return true
		case h.udpLeft > 0:
			h.udpLeft--
			if h.filling {
				h.putUDP(p, cpsFillers+h.fillN, h.fillN|cpsFillerBit)
				h.fillN++
			} else {
				h.putUDP(p, cpsClients+h.newConn, h.newConn)
				h.newConn++
			}
			return true
		}
		return false
	}
	q := h.queue[side]
	if len(q) == 0 && side == 0 {
		// Open connections while the window has room.
		for h.tcpLeft > 0 && len(h.free) > 0 {
			s := h.free[len(h.free)-1]
			h.free = h.free[:len(h.free)-1]
			h.conns[s] = cpsConn{n: h.newConn, busy: true}
			h.newConn++
			h.tcpLeft--
			h.open++
			q = append(q, s)
		}
	}
	if len(q) == 0 {
		h.queue[side] = q
		return false
	}
	s := q[0]
	h.queue[side] = q[1:]
	if len(h.queue[side]) == 0 {
		h.queue[side] = q[:0]
	}
	c := &h.conns[s]
	st := tcpStages[c.stage]
	client, cport := cpsClients+c.n, cpsPort(c.n)
	srv := cpsServer(c.n)
	if st.dir == 0 {
		h.putTCP(p, 0, client, srv, cport, 80, s, st.flags)
	} else {
		h.putTCP(p, 1, srv, cpsPublic, 80, c.pubPort, s, st.flags)
	}
	return true
}

// transmitted sees a packet leave on side.
func (h *cpsHarness) transmitted(side int, p *packet.Packet) {
	if h.table == nil {
		h.table, _ = conntrack.FlowOf(p)
	}
	if !h.tcp || h.filling {
		if side != 1 {
			h.badTX++
			return
		}
		h.done++
		if h.keep {
			h.flows = append(h.flows, p.Ct)
		}
		return
	}
	d := p.Data
	seq := binary.BigEndian.Uint32(d[14+20+4:])
	if int(seq) >= len(h.conns) || !h.conns[seq].busy {
		h.badTX++
		return
	}
	c := &h.conns[seq]
	st := tcpStages[c.stage]
	if int(st.dir) == side { // a client's packet must leave on wan, a server's on lan
		h.badTX++
		return
	}
	if c.stage == 0 {
		c.pubPort = binary.BigEndian.Uint16(d[14+20:])
		if binary.BigEndian.Uint32(d[14+12:]) != cpsPublic {
			h.badTX++
		}
		if h.keep {
			h.flows = append(h.flows, p.Ct)
		}
	}
	c.stage++
	if int(c.stage) == len(tcpStages) {
		c.busy = false
		h.free = append(h.free, seq)
		h.open--
		h.done++
		return
	}
	nd := tcpStages[c.stage].dir
	h.queue[nd] = append(h.queue[nd], seq)
}

// cpsPort is connection n's client port: spread over 1024-65535 as
// ephemeral ports are, so that SNAT can mostly keep it.
func cpsPort(n uint32) uint16 {
	x := n * 0x9e3779b1
	return uint16(1024 + (x>>16)%64512)
}

// cpsServer is connection n's server: one of 251 addresses.
func cpsServer(n uint32) uint32 { return cpsServers + n%251 }

// putIPv4 writes the Ethernet and IPv4 headers of a frame entering side
// with an L4 header of l4 bytes (padded to 60 bytes).
func (h *cpsHarness) putIPv4(p *packet.Packet, side int, src, dst uint32, proto uint8, l4 int) []byte {
	n := max(14+20+l4, 60)
	p.SetLen(n)
	d := p.Data
	copy(d, h.mac[side][:])
	binary.BigEndian.PutUint16(d[12:], packet.EtherTypeIPv4)
	ip := d[14:34]
	ip[0], ip[1] = 0x45, 0
	binary.BigEndian.PutUint16(ip[2:], uint16(20+l4))
	binary.BigEndian.PutUint32(ip[4:], 0x12340000)
	ip[8], ip[9] = 64, proto
	ip[10], ip[11] = 0, 0
	binary.BigEndian.PutUint32(ip[12:], src)
	binary.BigEndian.PutUint32(ip[16:], dst)
	binary.BigEndian.PutUint16(ip[10:], packet.Checksum(ip))
	clear(d[34+l4:])
	return d[34 : 34+l4]
}

func pseudo(src, dst uint32, proto uint8, n int) uint64 {
	return uint64(src>>16) + uint64(src&0xffff) + uint64(dst>>16) + uint64(dst&0xffff) + uint64(proto) + uint64(n)
}

// putUDP writes a 64-byte (with FCS) UDP frame of host src, port from x,
// to a server, entering on lan.
func (h *cpsHarness) putUDP(p *packet.Packet, src, x uint32) {
	dst := cpsServer(x)
	u := h.putIPv4(p, 0, src, dst, packet.ProtoUDP, 26)
	binary.BigEndian.PutUint16(u, cpsPort(x))
	binary.BigEndian.PutUint16(u[2:], 53)
	binary.BigEndian.PutUint16(u[4:], 26)
	u[6], u[7] = 0, 0
	clear(u[8:])
	cs := ^packet.Fold(packet.Sum(u, pseudo(src, dst, packet.ProtoUDP, 26)))
	if cs == 0 {
		cs = 0xffff
	}
	binary.BigEndian.PutUint16(u[6:], cs)
}

// putTCP writes a TCP segment (no options) carrying the connection's slot
// in its sequence number.
func (h *cpsHarness) putTCP(p *packet.Packet, side int, src, dst uint32, sport, dport uint16, slot uint32, flags uint8) {
	t := h.putIPv4(p, side, src, dst, packet.ProtoTCP, 20)
	binary.BigEndian.PutUint16(t, sport)
	binary.BigEndian.PutUint16(t[2:], dport)
	binary.BigEndian.PutUint32(t[4:], slot)
	binary.BigEndian.PutUint32(t[8:], 1)
	t[12], t[13] = 5<<4, flags
	binary.BigEndian.PutUint16(t[14:], 65535)
	t[16], t[17], t[18], t[19] = 0, 0, 0, 0
	binary.BigEndian.PutUint16(t[16:], ^packet.Fold(packet.Sum(t, pseudo(src, dst, packet.ProtoTCP, 20))))
}

// cpsRun is one graph and its harness.
type cpsRun struct {
	h        *cpsHarness
	r        *pipeline.Router
	capacity int
}

var cpsSeq sync.Mutex
var cpsNames int

func newCPSRun(t testing.TB, tcp, fast bool, capacity int) *cpsRun {
	cpsSeq.Lock()
	cpsNames++
	name := fmt.Sprintf("cps%d", cpsNames)
	cpsSeq.Unlock()
	h := &cpsHarness{tcp: tcp}
	for i := range cpsWindow {
		h.free = append(h.free, uint32(cpsWindow-1-i))
	}
	h.conns = make([]cpsConn, cpsWindow)
	// lan: from the inside router 02:..:01:02 to us; wan: from the
	// outside router 02:..:02:02.
	copy(h.mac[0][:], []byte{2, 0, 0, 0, 1, 1, 2, 0, 0, 0, 1, 2})
	copy(h.mac[1][:], []byte{2, 0, 0, 0, 2, 1, 2, 0, 0, 0, 2, 2})
	cpsHarnesses.Store(name, h)
	t.Cleanup(func() { cpsHarnesses.Delete(name) })
	r := buildStepped(t, "cps.toml", cpsGraph(name, capacity, fast), pipeline.Options{})
	t.Cleanup(func() { r.Close() })
	return &cpsRun{h: h, r: r, capacity: capacity}
}

// step runs rounds until the harness has nothing in flight; it fails on a
// round that moves nothing while something is still expected.
func (c *cpsRun) step(t testing.TB) {
	h := c.h
	idle := 0
	for {
		got := c.r.Round(0)
		if h.udpLeft == 0 && h.tcpLeft == 0 && h.open == 0 && h.estab == 0 {
			return
		}
		if got == 0 {
			if idle++; idle > 3 {
				t.Fatalf("cps: stalled with %d connections open, %d to open, %d UDP left (lost in the graph: see its drops)", h.open, h.tcpLeft, h.udpLeft)
			}
		} else {
			idle = 0
		}
	}
}

// fill sends n filler flows (not timed).
func (c *cpsRun) fill(t testing.TB, n int) {
	h := c.h
	h.filling, h.udpLeft = true, n
	c.step(t)
	h.filling = false
}

// cpsResult is one episode's measurement.
type cpsResult struct {
	conns, pkts int
	wall, cpu   time.Duration
	elems       map[string][2]uint64 // element type → timed ns, timed packets
	evicted     uint64
}

func elemTimes(s *pipeline.Snapshot) map[string][2]uint64 {
	m := map[string][2]uint64{}
	for _, e := range s.Elements {
		k := e.Type
		v := m[k]
		v[0] += e.TimedNanos
		v[1] += e.TimedPackets
		m[k] = v
	}
	return m
}

// episode opens n connections and measures them; the flows are kept for
// reset when keep.
func (c *cpsRun) episode(t testing.TB, n int, keep bool) cpsResult {
	h := c.h
	h.keep = keep
	h.flows = h.flows[:0]
	s0 := c.r.Snapshot()
	h.done, h.received = 0, 0
	if h.tcp {
		h.tcpLeft = n
	} else {
		h.udpLeft = n
	}
	cpu0, t0 := cputime.Thread(), time.Now()
	c.step(t)
	wall, cpu := time.Since(t0), cputime.Thread()-cpu0
	s1 := c.r.Snapshot()
	if h.done != n || h.badTX != 0 {
		t.Fatalf("cps: %d of %d connections completed, %d packets where they should not be", h.done, n, h.badTX)
	}
	res := cpsResult{conns: n, pkts: h.received, wall: wall, cpu: cpu, elems: map[string][2]uint64{},
		evicted: counter(s1, "ct", "evicted") - counter(s0, "ct", "evicted")}
	e0, e1 := elemTimes(s0), elemTimes(s1)
	for k, v := range e1 {
		res.elems[k] = [2]uint64{v[0] - e0[k][0], v[1] - e0[k][1]}
	}
	return res
}

// established measures n packets of the first m filler flows (which exist).
func (c *cpsRun) established(t testing.TB, n, m int) cpsResult {
	h := c.h
	h.filling = true // UDP, from the fillers
	h.estab, h.estabAt = m, 0
	s0 := c.r.Snapshot()
	h.received = 0
	cpu0, t0 := cputime.Thread(), time.Now()
	for h.received < n {
		c.r.Round(0)
	}
	wall, cpu := time.Since(t0), cputime.Thread()-cpu0
	s1 := c.r.Snapshot()
	h.estab, h.filling = 0, false
	res := cpsResult{conns: h.received, pkts: h.received, wall: wall, cpu: cpu, elems: map[string][2]uint64{}}
	e0, e1 := elemTimes(s0), elemTimes(s1)
	for k, v := range e1 {
		res.elems[k] = [2]uint64{v[0] - e0[k][0], v[1] - e0[k][1]}
	}
	if counter(s1, "ct", "new") != counter(s0, "ct", "new") {
		t.Fatalf("cps: established traffic created flows")
	}
	return res
}

// reset deletes the flows of the last episode (not timed) and, at 100%,
// sends as many fillers again.
func (c *cpsRun) reset(t testing.TB, refill bool) {
	h := c.h
	var p packet.Packet
	n := 0
	for _, a := range h.flows {
		p.Ct = a
		if tb, fl := conntrack.FlowOf(&p); fl != nil {
			tb.Delete(a.Flow)
			n++
		}
	}
	h.flows = h.flows[:0]
	if refill {
		c.fill(t, n)
	}
}

// cpsFill is the fill level: the share of the capacity held by fillers.
type cpsFill struct {
	name  string
	share float64
}

var cpsFills = []cpsFill{{"10%", 0.10}, {"90%", 0.90}, {"100%", 1.0}}

// prepare fills the table to f and returns how many connections an
// episode may open.
func (c *cpsRun) prepare(t testing.TB, f cpsFill, want int) int {
	c.fill(t, int(f.share*float64(c.capacity)))
	if f.share >= 1 {
		if c.h.table.Len() != c.capacity {
			t.Fatalf("cps: %d flows in a table of %d after filling it", c.h.table.Len(), c.capacity)
		}
		return want
	}
	return min(want, c.capacity-c.h.table.Len())
}

// runEpisode is one measured episode at fill f followed by its reset.
func (c *cpsRun) runEpisode(t testing.TB, f cpsFill, n int) cpsResult {
	full := f.share >= 1
	// UDP at 100%: the new flows are unassured and evict each other:
	// nothing to reset.
	keep := !full || c.h.tcp
	res := c.episode(t, n, keep)
	if keep {
		c.reset(t, full)
	}
	if !full && res.evicted != 0 {
		t.Fatalf("cps: %d flows evicted at %s", res.evicted, f.name)
	}
	if full && res.evicted < uint64(n)*9/10 {
		t.Fatalf("cps: %d evictions for %d connections at 100%%", res.evicted, n)
	}
	return res
}

func (r cpsResult) elemNs(typ string) float64 {
	v := r.elems[typ]
	if v[1] == 0 {
		return 0
	}
	return float64(v[0]) / float64(v[1])
}

// cpsElems are the element types whose self time is reported.
var cpsElems = []string{"Conntrack", "DNAT", "SNAT", "FastTrack", "FastTrackLearn"}

// BenchmarkCPS measures new connections through the NAT gateway graph
// (FastTrack on), UDP (one packet a connection) and TCP (seven packets, a
// handshake and a close), with the table at 10%, 90% and 100% of a
// capacity of 256k flows; b.N counts connections, run in episodes of up
// to 16384. Metrics: cps (per wall second), cps-cpu (per second of the
// worker thread's CPU time), pkts/conn, and each element's self time per
// connection (Conntrack-ns/conn, ...; sampled rounds). The harness
// (building and reading frames) is included, as gen is in BenchmarkNATGraph.
//
//	go test ./benchmarks -run xxx -bench CPS -benchtime 200000x
func BenchmarkCPS(b *testing.B) {
	capacity := envCount("JUNCTION_CPS_CAPACITY", 1<<18)
	for _, proto := range []string{"udp", "tcp"} {
		for _, f := range cpsFills {
			b.Run(fmt.Sprintf("proto=%s/fill=%s", proto, f.name), func(b *testing.B) {
				runtime.LockOSThread()
				defer runtime.UnlockOSThread()
				c := newCPSRun(b, proto == "tcp", true, capacity)
				per := c.prepare(b, f, 16384)
				c.runEpisode(b, f, per) // warm: pools, the SNAT cursors
				b.ResetTimer()
				b.ReportAllocs()
				var tot cpsResult
				tot.elems = map[string][2]uint64{}
				for left := b.N; left > 0; {
					n := min(left, per)
					left -= n
					b.StartTimer()
					r := c.runEpisode(b, f, n)
					b.StopTimer()
					tot.conns += r.conns
					tot.pkts += r.pkts
					tot.wall += r.wall
					tot.cpu += r.cpu
					for k, v := range r.elems {
						w := tot.elems[k]
						tot.elems[k] = [2]uint64{w[0] + v[0], w[1] + v[1]}
					}
				}
				b.ReportMetric(float64(tot.conns)/tot.wall.Seconds(), "cps")
				b.ReportMetric(float64(tot.conns)/tot.cpu.Seconds(), "cps-cpu")
				b.ReportMetric(float64(tot.pkts)/float64(tot.conns), "pkts/conn")
				ppc := float64(tot.pkts) / float64(tot.conns)
				for _, e := range cpsElems {
					b.ReportMetric(tot.elemNs(e)*ppc, e+"-ns/conn")
				}
			})
		}
	}
}

// BenchmarkCPSEstablished is the reference for BenchmarkCPS: UDP packets
// of existing flows through the same graph without FastTrack (the
// established slow path), 64k flows in a table of 256k.
func BenchmarkCPSEstablished(b *testing.B) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	capacity := envCount("JUNCTION_CPS_CAPACITY", 1<<18)
	c := newCPSRun(b, false, false, capacity)
	c.fill(b, 65536)
	c.established(b, 65536, 65536)
	b.ResetTimer()
	b.ReportAllocs()
	r := c.established(b, max(b.N, 64), 65536)
	b.ReportMetric(float64(r.pkts)/r.wall.Seconds(), "pps")
	b.ReportMetric(float64(r.pkts)/r.cpu.Seconds(), "pps-cpu")
	for _, e := range cpsElems {
		b.ReportMetric(r.elemNs(e), e+"-ns/pkt")
	}
}

// TestCPSSideBySide measures connections per second against the
// established slow path, alternating episodes of the two graphs in one
// process (the machine is shared and noisy: what matters is the ratio
// within a run). For each protocol and fill level it runs
// JUNCTION_CPS_N (default 7) rounds; a round is an episode of new
// connections on the FastTrack graph and as many packets of established
// flows on the graph without FastTrack. It prints per round cps (per
// CPU-second of the worker thread), established packets per CPU-second,
// new-flow packets per CPU-second over established ones, each element's
// self time per connection, and the medians with their range.
//
//	JUNCTION_CPS=1 go test ./benchmarks -run CPSSideBySide -v -timeout 0
func TestCPSSideBySide(t *testing.T) {
	if os.Getenv("JUNCTION_CPS") == "" {
		t.Skip("set JUNCTION_CPS=1 to run (a measurement, never in CI)")
	}
	rounds := envCount("JUNCTION_CPS_N", 7)
	capacity := envCount("JUNCTION_CPS_CAPACITY", 1<<20)
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	est := newCPSRun(t, false, false, 1<<18)
	est.fill(t, 65536)
	est.established(t, 1<<16, 65536)
	for _, proto := range []string{"udp", "tcp"} {
		for _, f := range cpsFills {
			c := newCPSRun(t, proto == "tcp", true, capacity)
			per := c.prepare(t, f, 65536)
			c.runEpisode(t, f, per)
			var cps, ratio []float64
			elems := map[string][]float64{}
			for k := range rounds {
				r := c.runEpisode(t, f, per)
				e := est.established(t, r.pkts, 65536)
				ppc := float64(r.pkts) / float64(r.conns)
				cp := float64(r.conns) / r.cpu.Seconds()
				rt := (float64(r.pkts) / r.cpu.Seconds()) / (float64(e.pkts) / e.cpu.Seconds())
				cps, ratio = append(cps, cp), append(ratio, rt)
				line := fmt.Sprintf("%s fill=%-4s round %d: %.3f Mcps-cpu (%.3f wall), established %.2f Mpps-cpu, new/established pkts %.2f;",
					proto, f.name, k+1, cp/1e6, float64(r.conns)/r.wall.Seconds()/1e6, float64(e.pkts)/e.cpu.Seconds()/1e6, rt)
				for _, n := range cpsElems {
					v := r.elemNs(n) * ppc
					elems[n] = append(elems[n], v)
					line += fmt.Sprintf(" %s %.0f", n, v)
				}
				fmt.Println(line, "ns/conn")
			}
			med := func(v []float64) string {
				slices.Sort(v)
				return fmt.Sprintf("%.3g (%.3g-%.3g)", v[len(v)/2], v[0], v[len(v)-1])
			}
			line := fmt.Sprintf("%s fill=%s capacity=%d, median of %d: Mcps-cpu %s, new/established %s; ns/conn:",
				proto, f.name, capacity, rounds, med(scale(cps, 1e-6)), med(ratio))
			for _, n := range cpsElems {
				line += fmt.Sprintf(" %s %s", n, med(elems[n]))
			}
			fmt.Println(line)
		}
	}
}

func scale(v []float64, f float64) []float64 {
	for i := range v {
		v[i] *= f
	}
	return v
}
