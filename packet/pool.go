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
func NewPool(n int) *Pool {
	mem := make([]byte, n*BufSize)
	return NewPoolFrom(mem, n)
}

// NewPoolFrom makes a pool of n packets whose buffers are consecutive
// BufSize-byte slices of mem (e.g. a UMEM shared with the kernel).
func NewPoolFrom(mem []byte, n int) *Pool {
	if len(mem) < n*BufSize {
		panic("packet: pool memory too small")
	}
	p := &Pool{free: make([]*Packet, 0, n), pkts: make([]Packet, n), size: n}
	for i := range p.pkts {
		pk := &p.pkts[i]
		pk.buf = mem[i*BufSize : (i+1)*BufSize : (i+1)*BufSize]
		pk.pool = p
		pk.Reset()
		p.free = append(p.free, pk)
	}
	return p
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

func (p *Pool) put(pk *Packet) {
	if !pk.held {
		panic("packet: double free")
	}
	pk.held = false
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
