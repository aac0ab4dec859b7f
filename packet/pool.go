package packet

// Pool is a fixed set of packet buffers owned by one worker (or one device
// queue served by one worker). Get and Put are not safe for concurrent use:
// a pool is single-threaded by design, which is what makes it cheap.
//
// Buffers are carved from one contiguous allocation so that a pool costs one
// allocation at start and none afterwards.
type Pool struct {
	free []*Packet
	pkts []Packet
	size int
	// gets and puts are plain counters (single-threaded); Outstanding is
	// their difference.
	gets, puts uint64
}

// NewPool makes a pool of n packets with BufSize-byte buffers.
//
// The buffers are poolStride bytes apart, one cache line more than BufSize:
// at a power-of-two stride the same offset of every buffer (the headers,
// Headroom bytes in) falls in the same few sets of a set-associative L1
// cache, so the 64 frames of a batch evict one another's headers. With an
// odd number of lines between them, those lines spread over every set.
// (BenchmarkPoolStride measures it.)
func NewPool(n int) *Pool {
	return poolOver(make([]byte, max(n-1, 0)*poolStride+BufSize), n, poolStride)
}

// poolStride is the distance between a NewPool pool's buffers.
const poolStride = BufSize + 64

// NewPoolSize makes a pool of n packets with size-byte buffers (at least
// BufSize), for the few elements that build packets longer than a frame:
// IP reassembly (elements/ipfrag) holds a whole datagram, up to 65,535
// bytes, in one packet. Such a packet must not reach a driver or an
// element that copies into a frame-sized pool unless it fits there:
// Clone and SetFrame refuse what does not fit, drivers drop it as too long.
// Each buffer is its own allocation, so that the pages of a big buffer a
// short datagram never touches are never made resident.
func NewPoolSize(n, size int) *Pool {
	size = max(size, BufSize)
	p := &Pool{free: make([]*Packet, 0, n), pkts: make([]Packet, n), size: n}
	for i := range p.pkts {
		pk := &p.pkts[i]
		pk.buf = make([]byte, size)
		pk.pool = p
		pk.Reset()
		p.free = append(p.free, pk)
	}
	return p
}

// poolOver makes a pool of n packets whose buffers start stride bytes
// apart in mem.
func poolOver(mem []byte, n, stride int) *Pool {
	p := &Pool{free: make([]*Packet, 0, n), pkts: make([]Packet, n), size: n}
	for i := range p.pkts {
		pk := &p.pkts[i]
		pk.buf = mem[i*stride : i*stride+BufSize : i*stride+BufSize]
		pk.pool = p
		pk.Reset()
		p.free = append(p.free, pk)
	}
	return p
}

// NewPoolFrom makes a pool of n packets whose buffers are consecutive
// BufSize-byte slices of mem (e.g. a UMEM shared with the kernel).
func NewPoolFrom(mem []byte, n int) *Pool {
	if len(mem) < n*BufSize {
		panic("packet: pool memory too small")
	}
	return poolOver(mem, n, BufSize)
}

// Get takes a packet from the pool, reset, or returns nil if the pool is
// empty (the caller counts that as a drop or stops receiving).
//
// Get repeats GetRaw's few lines instead of calling it: calling GetRaw and
// Reset would put Get over the inliner's budget (TestInlining guards it).
func (p *Pool) Get() *Packet {
	n := len(p.free)
	if n == 0 {
		return nil
	}
	pk := p.free[n-1]
	p.free = p.free[:n-1]
	pk.held = true
	pk.Reset()
	p.gets++
	return pk
}

// GetRaw is Get without Reset, for drivers that overwrite every field they
// use (the gen driver rewrites a template in place).
func (p *Pool) GetRaw() *Packet {
	n := len(p.free)
	if n == 0 {
		return nil
	}
	pk := p.free[n-1]
	p.free = p.free[:n-1]
	pk.held = true
	p.gets++
	return pk
}

// GetRawN appends up to n packets to b (fewer if the pool or b's spare
// capacity runs out), as GetRaw would take them one by one, and returns how
// many: a receive burst takes its packets with one slice copy instead of a
// call each.
func (p *Pool) GetRawN(b *Batch, n int) int {
	n = min(n, len(p.free), cap(b.Pkts)-len(b.Pkts))
	if n <= 0 {
		return 0
	}
	take := p.free[len(p.free)-n:]
	for _, pk := range take {
		pk.held = true
	}
	b.Pkts = append(b.Pkts, take...)
	p.free = p.free[:len(p.free)-n]
	p.gets += uint64(n)
	return n
}

func (p *Pool) put(pk *Packet) {
	if !pk.held {
		panic("packet: double free")
	}
	pk.held = false
	pk.Trace = 0
	p.free = append(p.free, pk)
	p.puts++
}

// Size is the number of packets the pool was made with.
func (p *Pool) Size() int { return p.size }

// Available is the number of packets in the pool now.
func (p *Pool) Available() int { return len(p.free) }

// Outstanding is the number of packets taken and not yet returned.
func (p *Pool) Outstanding() int { return p.size - len(p.free) }

// Index returns the position of pk in the pool's packet array, which drivers
// use to map a packet back to a frame address.
func (p *Pool) Index(pk *Packet) int {
	for i := range p.pkts { // only used off the hot path
		if &p.pkts[i] == pk {
			return i
		}
	}
	return -1
}

// Packet returns the i-th packet of the pool, held or not.
func (p *Pool) Packet(i int) *Packet { return &p.pkts[i] }
