package gen

import (
	"encoding/binary"
	"fmt"
	"math/bits"
	"net/netip"
	"sync"
	"sync/atomic"

	"github.com/junction-dataplane/junction/drivers"
	"github.com/junction-dataplane/junction/internal/monotime"
	"github.com/junction-dataplane/junction/packet"
)

// PoolSize is the number of packets in each RX queue's pool. It must cover
// what the graph holds at once (a batch in flight per element, ARP queues,
// the packets of a TX ring that a driver completes late) so that the
// generator does not starve; 8192 packets is 16 MiB per queue, taken only
// when the queue first receives (a sink-only gen device costs nothing).
const PoolSize = 8192

const (
	l3Off     = packet.EthernetLen
	l4Off     = l3Off + packet.IPv4MinLen
	ipCsumOff = l3Off + 10
	ipSrcOff  = l3Off + 12
	ipDstOff  = l3Off + 16
	udpCsum   = l4Off + 6
	tcpCsum   = l4Off + 16
	icmpCsum  = l4Off + 2
	dportOff  = l4Off + 2 // TCP and UDP
	icmpIDOff = l4Off + 4
)

func init() {
	drivers.Register(drivers.Driver{
		Name:      "gen",
		NewConfig: newConfig,
		Open:      open,
		Doc:       manual(),
	})
}

// queue is one RX queue's state, touched only by the worker that owns it
// (its counters are atomics so that Stats and Drained can read them).
type queue struct {
	pool      *packet.Pool
	rng       uint64
	flow0     uint32 // the queue's flows are flow0 + i*stride, i < nflows
	stride    uint32
	nflows    uint64
	seq       uint64 // the next sequence number (the sequence key)
	finite    bool
	quota     int64
	rxPkts    atomic.Uint64
	rxBytes   atomic.Uint64
	poolEmpty atomic.Uint64

	// Token bucket: credit in packets, refilled at perNs packets per ns.
	perNs  float64
	burst  float64
	credit float64
	last   int64

	_ [64]byte // keep queues on separate cache lines
}

// txCounter is one worker's TX counters, padded to a cache line so that
// workers do not share one.
type txCounter struct {
	pkts  atomic.Uint64
	bytes atomic.Uint64
	_     [48]byte
}

// Device is an open gen device.
type Device struct {
	info  drivers.Info
	index uint16
	s     settings

	// The template and the values it holds in the fields that vary.
	tmpl             []byte
	head             [headLen / 16][16]byte // tmpl's first headLen bytes, zero-padded
	srcM             uint64                 // divMagic(srcN), when srcN > 1
	tSrc, tDst       uint32
	tSport, tDport   uint16
	tIPCsum, tL4Csum uint16
	ipBase, l4Base   uint32 // see fill
	l4CsumOff        int
	sportOff         int    // the source port's offset (ICMP: the identifier's)
	addrMask         uint32 // all ones when the L4 checksum covers the addresses (not ICMP's)
	general          bool   // ICMP or a dport range: fillGeneral
	udp              bool
	srcN, dstN       uint64

	queues []queue
	tx     []txCounter
	// txMu keeps Stats from reading tx while a reload replaces it
	// (resize.go); Transmit needs no lock: no worker runs then.
	txMu sync.Mutex
}

var _ drivers.Device = (*Device)(nil)

func open(cfg any, ctx drivers.OpenContext) (drivers.Device, error) {
	c, ok := cfg.(*Config)
	if !ok {
		return nil, fmt.Errorf("gen: config is %T, want *gen.Config", cfg)
	}
	s, err := c.validate(ctx.Workers, ctx.MAC)
	if err != nil {
		return nil, err
	}
	return newDevice(s, ctx), nil
}

func newDevice(s settings, ctx drivers.OpenContext) *Device {
	mac := ctx.MAC
	if mac == (packet.MAC{}) {
		mac, _ = packet.ParseMAC(DefaultDstMAC)
	}
	d := &Device{
		info:   drivers.Info{Name: ctx.Name, Driver: "gen", MAC: mac, Addresses: ctx.Addresses, FlowAffine: s.split},
		index:  uint16(ctx.Index),
		s:      s,
		udp:    s.proto == packet.ProtoUDP,
		srcN:   s.src.n,
		dstN:   s.dst.n,
		queues: make([]queue, s.queues),
		tx:     make([]txCounter, max(ctx.Workers, 1)),
	}
	if s.v6 {
		d.buildTemplate6()
	} else {
		d.buildTemplate()
	}
	batch := ctx.Batch
	if batch <= 0 {
		batch = packet.DefaultBatch
	}
	nq := uint64(s.queues)
	for q := range d.queues {
		qs := &d.queues[q]
		qs.rng = splitmix(s.seed + uint64(q)*0x9e3779b97f4a7c15)
		qs.stride, qs.nflows = 1, s.flows
		if s.split {
			qs.flow0, qs.stride = uint32(q), uint32(nq)
			qs.nflows = (s.flows - uint64(q) + nq - 1) / nq
		}
		if s.count > 0 {
			qs.finite = true
			qs.quota = s.count / int64(nq)
			if uint64(q) < uint64(s.count)%nq {
				qs.quota++
			}
		}
		if s.rate > 0 {
			share := s.rate / float64(nq)
			qs.perNs = share / 1e9
			// A worker that stalls (GC, preemption) for up to 10 ms
			// catches up afterwards, one full batch per call, so the
			// average rate holds; longer stalls are lost.
			qs.burst = max(float64(batch), share/100)
		}
	}
	return d
}

// buildTemplate writes the frame of flow 0 to the first destination, with
// both checksums computed in full; Receive patches copies of it.
func (d *Device) buildTemplate() {
	s := &d.s
	f := d.newFrame(packet.EtherTypeIPv4)

	d.tSrc, d.tDst, d.tSport, d.tDport = s.src.first, s.dst.first, uint16(s.sport0), uint16(s.dport0)
	ip := packet.IPv4(f[l3Off:])
	ip.SetVersionIHL(packet.IPv4MinLen)
	ip.SetTotalLen(s.size - l3Off)
	ip.SetFlagsFrag(packet.IPv4FlagDF)
	ip.SetTTL(64)
	ip.SetProtocol(s.proto)
	binary.BigEndian.PutUint32(f[ipSrcOff:], d.tSrc)
	binary.BigEndian.PutUint32(f[ipDstOff:], d.tDst)
	d.tIPCsum = ip.ComputeChecksum()
	ip.SetChecksum(d.tIPCsum)

	l4 := f[l4Off:]
	d.sportOff, d.addrMask = l4Off, ^uint32(0)
	switch s.proto {
	case packet.ProtoUDP:
		writeL4(l4, s.proto, d.tSport, d.tDport)
		d.l4CsumOff = udpCsum
	case packet.ProtoTCP:
		writeL4(l4, s.proto, d.tSport, d.tDport)
		d.l4CsumOff = tcpCsum
	case packet.ProtoICMP:
		// An echo request; the identifier is the flow's "source port"
		// (what Conntrack and NAT key ICMP flows by), sequence 1.
		l4[0], l4[1] = 8, 0
		binary.BigEndian.PutUint16(l4[4:], d.tSport)
		binary.BigEndian.PutUint16(l4[6:], 1)
		d.l4CsumOff, d.sportOff, d.addrMask = icmpCsum, icmpIDOff, 0
	}
	var acc uint64
	if d.addrMask != 0 {
		acc = packet.PseudoHeaderSumV4(ip.Src4(), ip.Dst4(), s.proto, len(l4))
	}
	d.setTemplate(f, ^packet.Fold(packet.Sum(l4, acc)))
	// ~HC + Σ~m over the template's words that fill rewrites.
	d.ipBase = uint32(^d.tIPCsum) + complementSum(d.tSrc, d.tDst)
	d.l4Base = uint32(^d.tL4Csum) + complementSum(d.tSrc, d.tDst)&d.addrMask + uint32(^d.tSport)
	if s.dportN > 1 {
		d.l4Base += uint32(^d.tDport) // fillGeneral rewrites the port
	}
	d.general = s.proto == packet.ProtoICMP || s.dportN > 1
}

// newFrame returns a zeroed frame of the configured size with its
// Ethernet header written.
func (d *Device) newFrame(etherType uint16) []byte {
	f := make([]byte, d.s.size)
	eth := packet.Ethernet(f)
	eth.SetDst(d.s.dstMAC)
	eth.SetSrc(d.s.srcMAC)
	eth.SetType(etherType)
	return f
}

// writeL4 writes the template's UDP or TCP header (an ACK with sequence
// and acknowledgement 1) into l4, checksum left zero.
func writeL4(l4 []byte, proto uint8, sport, dport uint16) {
	if proto == packet.ProtoUDP {
		u := packet.UDP(l4)
		u.SetSrcPort(sport)
		u.SetDstPort(dport)
		u.SetLength(len(l4))
		return
	}
	t := packet.TCP(l4)
	t.SetSrcPort(sport)
	t.SetDstPort(dport)
	t.SetSeq(1)
	t.SetAck(1)
	t.SetDataOffset(packet.TCPMinLen)
	t.SetFlags(packet.TCPAck)
	t.SetWindow(65535)
}

// setTemplate makes f the frame fill copies, with cs, its L4 checksum,
// written at l4CsumOff, and readies what fill derives from it.
func (d *Device) setTemplate(f []byte, cs uint16) {
	if d.udp && cs == 0 {
		cs = 0xffff // RFC 768: a computed 0 is sent as all ones
	}
	binary.BigEndian.PutUint16(f[d.l4CsumOff:], cs)
	d.tL4Csum = cs
	d.tmpl = f
	var head [headLen]byte
	copy(head[:], f)
	for i := range d.head {
		d.head[i] = [16]byte(head[i*16:])
	}
	if d.srcN > 1 {
		d.srcM = divMagic(uint32(d.srcN))
	}
}

// splitmix is SplitMix64's finalizer: it turns seed+q into well-mixed,
// distinct per-queue PRNG states.
func splitmix(x uint64) uint64 {
	x += 0x9e3779b97f4a7c15
	x = (x ^ x>>30) * 0xbf58476d1ce4e5b9
	x = (x ^ x>>27) * 0x94d049bb133111eb
	return x ^ x>>31
}

// wyrand is Wang Yi's wyrand: one add and one 64×64→128 multiply per
// number, plenty for traffic shaping and far cheaper than math/rand.
func wyrand(s *uint64) uint64 {
	*s += 0xa0761d6478bd642f
	hi, lo := bits.Mul64(*s, *s^0xe7037ed1a0b428db)
	return hi ^ lo
}

// RxQueues is the number of RX queues.
func (d *Device) RxQueues() int { return len(d.queues) }

// Drained reports that queue q has sent its share of count.
func (d *Device) Drained(q int) bool {
	if uint(q) >= uint(len(d.queues)) {
		return true
	}
	qs := &d.queues[q]
	return qs.finite && int64(qs.rxPkts.Load()) >= qs.quota
}

// Receive appends generated packets to b: as many as fit, within the
// queue's remaining count and rate credit and while its pool lasts.
func (d *Device) Receive(q int, b *packet.Batch) int {
	if uint(q) >= uint(len(d.queues)) {
		return 0
	}
	qs := &d.queues[q]
	if qs.pool == nil {
		qs.pool = packet.NewPool(PoolSize) // once, by the queue's worker
	}
	n := b.Cap() - b.Len()
	if qs.finite {
		left := qs.quota - int64(qs.rxPkts.Load())
		if left < int64(n) {
			n = int(max(left, 0))
		}
	}
	if qs.perNs > 0 && n > 0 {
		n = qs.admit(n, monotime.Now())
	}
	if n <= 0 {
		return 0
	}
	var made int
	if d.s.v6 {
		made = d.fill6(qs, uint16(q), b, n)
	} else {
		made = d.fill(qs, uint16(q), b, n)
	}
	if made < n {
		qs.poolEmpty.Add(1)
		qs.credit += float64(n - made) // unused tokens stay in the bucket
	}
	if made > 0 {
		qs.rxPkts.Add(uint64(made))
		qs.rxBytes.Add(uint64(made * len(d.tmpl)))
	}
	return made
}

// admit takes up to n tokens from the bucket, refilled for the time since
// the last call; now is the monotonic clock, read once per batch.
func (qs *queue) admit(n int, now int64) int {
	if qs.last == 0 {
		qs.last = now
	}
	qs.credit += float64(now-qs.last) * qs.perNs
	qs.last = now
	if qs.credit > qs.burst {
		qs.credit = qs.burst
	}
	if c := int(qs.credit); c < n {
		n = c
	}
	qs.credit -= float64(n)
	return n
}

// fill builds n packets (fewer if the pool runs out) into b.
//
// Per packet: copy the template, write the source and destination
// addresses and the source port, and patch the checksums incrementally.
// RFC 1624 eqn. 3 for several changed 16-bit words m → m' is
//
//	HC' = ~(~HC + Σ(~m + m'))
//
// so every term that depends only on the template (~HC and the ~m of the
// template's addresses and port) is summed once at open into ipBase and
// l4Base; per packet only the new words are added and the sum folded. Both
// checksums cover the addresses (the L4 one through its pseudo-header); only
// the L4 one covers the port.
//
// The loop is the generator's whole cost in every graph benchmark, paid
// alike by the paths they compare, so it is kept lean (what each choice
// saved: benchmarks/nat.md, BenchmarkReceiveTransmit): the packets are taken from the pool in one slice
// copy (Pool.GetRawN), the first 64 bytes of the template (every header;
// the whole of a minimum-size frame) are copied as four 16-byte moves
// rather than by a memmove call (the rest of a longer frame is copied by a
// second loop: no call may stay in this one, or the compiler keeps its
// values on the stack), and a flow's source address and port come from a
// multiply in place of a division (fastDiv).
func (d *Device) fill(qs *queue, q uint16, b *packet.Batch, n int) int {
	if d.general {
		return d.fillGeneral(qs, q, b, n)
	}
	start := len(b.Pkts)
	made := qs.pool.GetRawN(b, n)
	tmpl := d.tmpl
	head := &d.head
	size := len(tmpl)
	rng := qs.rng
	srcFirst, dstFirst := d.s.src.first, d.s.dst.first
	srcN, srcM, dstN, nflows := uint32(d.srcN), d.srcM, d.dstN, qs.nflows
	flow0, stride := qs.flow0, qs.stride
	sport0 := uint32(d.tSport)
	ipBase, l4Base := d.ipBase, d.l4Base
	csOff, udp, index := d.l4CsumOff, d.udp, d.index
	for _, p := range b.Pkts[start : start+made] {
		buf, f := stamp(p, head)

		r := wyrand(&rng)
		// Multiply-shift maps 32 random bits onto [0, n) without a division.
		dst := dstFirst + uint32((uint64(uint32(r>>32))*dstN)>>32)
		fl := flow0 + stride*uint32((uint64(uint32(r))*nflows)>>32)
		src, sport := srcFirst, sport0
		if srcN == 1 {
			sport += fl
		} else {
			qt := fastDiv(fl, srcM)
			src += fl - qt*srcN
			sport += qt
		}
		binary.BigEndian.PutUint32(f[ipSrcOff:], src)
		binary.BigEndian.PutUint32(f[ipDstOff:], dst)
		binary.BigEndian.PutUint16(f[l4Off:], uint16(sport))

		addr := src>>16 + src&0xffff + dst>>16 + dst&0xffff
		ipcs := ^packet.FoldDelta(ipBase + addr)
		l4cs := ^packet.FoldDelta(l4Base + addr + sport)
		if udp && l4cs == 0 {
			l4cs = 0xffff // RFC 768: a computed 0 is sent as all ones
		}
		binary.BigEndian.PutUint16(f[ipCsumOff:], ipcs)
		binary.BigEndian.PutUint16(f[csOff&(headLen-2):], l4cs) // csOff < headLen, even

		arrived(p, buf, size, index, q)
	}
	copyTail(b.Pkts[start:start+made], tmpl)
	if d.s.sequence {
		seq := qs.seq
		for _, p := range b.Pkts[start : start+made] {
			binary.BigEndian.PutUint16(p.Data[SeqOffset:], q)
			binary.BigEndian.PutUint64(p.Data[SeqOffset+2:], seq)
			binary.BigEndian.PutUint16(p.Data[udpCsum:], 0)
			seq++
		}
		qs.seq = seq
	}
	qs.rng = rng
	return made
}

// fillGeneral is fill for what the lean loop leaves out: ICMP (the
// identifier's offset, a checksum without pseudo-header) and a
// destination port drawn per packet. A loop of its own, so that the
// common case pays nothing for them (BenchmarkReceiveTransmit/udp64:
// about 6% more user time with them in one loop).
func (d *Device) fillGeneral(qs *queue, q uint16, b *packet.Batch, n int) int {
	start := len(b.Pkts)
	made := qs.pool.GetRawN(b, n)
	tmpl := d.tmpl
	head := &d.head
	size := len(tmpl)
	rng := qs.rng
	srcFirst, dstFirst := d.s.src.first, d.s.dst.first
	srcN, srcM, dstN, nflows := uint32(d.srcN), d.srcM, d.dstN, qs.nflows
	flow0, stride := qs.flow0, qs.stride
	sport0 := uint32(d.tSport)
	dport0, dportN := d.s.dport0, uint64(d.s.dportN)
	ipBase, l4Base := d.ipBase, d.l4Base
	csOff, udp, index := d.l4CsumOff, d.udp, d.index
	sportOff, addrMask := d.sportOff, d.addrMask
	for _, p := range b.Pkts[start : start+made] {
		buf, f := stamp(p, head)

		r := wyrand(&rng)
		// Multiply-shift maps 32 random bits onto [0, n) without a division.
		dst := dstFirst + uint32((uint64(uint32(r>>32))*dstN)>>32)
		fl := flow0 + stride*uint32((uint64(uint32(r))*nflows)>>32)
		src, sport := srcFirst, sport0
		if srcN == 1 {
			sport += fl
		} else {
			qt := fastDiv(fl, srcM)
			src += fl - qt*srcN
			sport += qt
		}
		binary.BigEndian.PutUint32(f[ipSrcOff:], src)
		binary.BigEndian.PutUint32(f[ipDstOff:], dst)
		binary.BigEndian.PutUint16(f[sportOff&(headLen-2):], uint16(sport)) // sportOff < headLen, even
		var dport uint32
		if dportN > 1 {
			// A destination port drawn per packet, like the address.
			dport = dport0 + uint32((uint64(uint32(wyrand(&rng)))*dportN)>>32)
			binary.BigEndian.PutUint16(f[dportOff:], uint16(dport))
		}

		addr := src>>16 + src&0xffff + dst>>16 + dst&0xffff
		ipcs := ^packet.FoldDelta(ipBase + addr)
		l4cs := ^packet.FoldDelta(l4Base + addr&addrMask + sport + dport)
		if udp && l4cs == 0 {
			l4cs = 0xffff // RFC 768: a computed 0 is sent as all ones
		}
		binary.BigEndian.PutUint16(f[ipCsumOff:], ipcs)
		binary.BigEndian.PutUint16(f[csOff&(headLen-2):], l4cs) // csOff < headLen, even

		arrived(p, buf, size, index, q)
	}
	copyTail(b.Pkts[start:start+made], tmpl)
	qs.rng = rng
	return made
}

// headLen is how much of the template fill copies in four 16-byte moves:
// every header of a generated frame, and the whole of a 64-byte one.
const headLen = 64

// stamp copies the template's head into p's buffer and returns the buffer
// and its head, for the fill loops to patch. GetRawN skips Reset: every
// annotation with a meaning when zero is set by arrived. Scratch is left
// as it was, as its contract allows (an element reads only what it
// wrote), which saves clearing 32 bytes per packet. It and arrived inline
// (go build -gcflags=-m): the fill loops must keep calls out.
func stamp(p *packet.Packet, head *[headLen / 16][16]byte) ([]byte, *[headLen]byte) {
	buf := p.Buffer()[packet.Headroom:]
	// A buffer always has room for the 64 bytes, even when the frame
	// is shorter: the bytes past the frame are not part of it.
	f := (*[headLen]byte)(buf)
	// Four 16-byte moves: a 64-byte array copy would call memmove.
	*(*[16]byte)(f[0:]) = head[0]
	*(*[16]byte)(f[16:]) = head[1]
	*(*[16]byte)(f[32:]) = head[2]
	*(*[16]byte)(f[48:]) = head[3]
	return buf, f
}

// arrived makes p the size-byte frame at the start of buf, received on
// queue q of device index.
func arrived(p *packet.Packet, buf []byte, size int, index, q uint16) {
	p.Data = buf[:size]
	p.InDevice, p.InQueue, p.L3, p.Port = index, q, l3Off, 0
	p.NextHop = netip.Addr{}
	// Field by field: zeroing the whole Ct (which holds a
	// pointer) calls runtime.wbZero while the GC runs, and any
	// call in the loop makes the compiler keep its values on the
	// stack.
	p.Ct.Table = nil
	p.Ct.Flow, p.Ct.Tag, p.Ct.State, p.Ct.Dir, p.Ct.TTL = 0, 0, 0, 0, 0
	p.FlowHash = 0
}

// copyTail copies the rest of a frame longer than headLen into pkts, in a
// loop of its own: a call to memmove in a fill loop, even one never made,
// would make the compiler keep that loop's values on the stack.
func copyTail(pkts []*packet.Packet, tmpl []byte) {
	if len(tmpl) > headLen {
		for _, p := range pkts {
			copy(p.Data[headLen:], tmpl[headLen:])
		}
	}
}

// divMagic returns the multiplier with which fastDiv divides by d, for
// 2 ≤ d < 2^32 (Lemire, Kaser and Kurz, "Faster remainder by direct
// computation", 2019: ⌊M·n / 2^64⌋ = ⌊n/d⌋ for every 32-bit n when
// M = ⌊(2^64-1)/d⌋ + 1). d = 1 would overflow M; fill never divides by 1.
func divMagic(d uint32) uint64 { return ^uint64(0)/uint64(d) + 1 }

// fastDiv is n / d for the d whose divMagic is m: one 64×64 multiply.
func fastDiv(n uint32, m uint64) uint32 {
	hi, _ := bits.Mul64(m, uint64(n))
	return uint32(hi)
}

// complementSum is Σ ~m over the 16-bit words of two addresses.
func complementSum(a, b uint32) uint32 {
	return uint32(^uint16(a>>16)) + uint32(^uint16(a)) + uint32(^uint16(b>>16)) + uint32(^uint16(b))
}

// Transmit counts and frees every packet of b.
func (d *Device) Transmit(worker int, b *packet.Batch) {
	n, bytes := len(b.Pkts), 0
	for _, p := range b.Pkts {
		bytes += len(p.Data)
	}
	b.FreeAll()
	if n == 0 {
		return
	}
	// A worker index beyond the configured workers is a caller bug; folding
	// it keeps the counters right (they are atomics) instead of panicking.
	c := &d.tx[uint(worker)%uint(len(d.tx))]
	c.pkts.Add(uint64(n))
	c.bytes.Add(uint64(bytes))
}

// Flush has nothing to push out.
func (d *Device) Flush() error { return nil }

// Close releases nothing: the device holds no packets between calls, and
// its pools are garbage once the graph has freed what it held.
func (d *Device) Close() error { return nil }

// Info describes the device.
func (d *Device) Info() drivers.Info { return d.info }

// Stats sums the per-queue and per-worker counters.
func (d *Device) Stats() []drivers.Counter {
	var rxP, rxB, empty, txP, txB uint64
	for i := range d.queues {
		qs := &d.queues[i]
		rxP += qs.rxPkts.Load()
		rxB += qs.rxBytes.Load()
		empty += qs.poolEmpty.Load()
	}
	d.txMu.Lock()
	for i := range d.tx {
		txP += d.tx[i].pkts.Load()
		txB += d.tx[i].bytes.Load()
	}
	d.txMu.Unlock()
	return []drivers.Counter{
		{Name: "rx_packets", Value: rxP},
		{Name: "rx_bytes", Value: rxB},
		{Name: "tx_packets", Value: txP},
		{Name: "tx_bytes", Value: txB},
		{Name: "rx_pool_empty", Value: empty},
	}
}
