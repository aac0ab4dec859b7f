package nat

import (
	"math/rand/v2"

	"github.com/junction-dataplane/junction/elements/conntrack"
	"github.com/junction-dataplane/junction/elements/flowsteer"
)

// Bulk port blocks (port_block_alloc = "bulk", RFC 7422's non-deterministic
// allocation): each worker cuts its units into blocks of port_block ports
// and keeps, per outside address, a pool of free ones (shuffled, so that
// which block a host gets is not predictable). A host's first new mapping
// on a worker takes a free block of its outside address ("port block
// allocated" in the log); its later mappings there come only from that
// block; a flow finding no free block, or its host's block full, is
// dropped ("ports exhausted"). The block goes back to the pool ("port
// block released") once its last mapping has ended: a mapping ends
// lazily, so Tick looks at a few held blocks each time and frees their
// mappings whose timeout passed and whose flows are gone. The log has two
// lines per host and block instead of one per flow, and the block's ports
// are the host's between the two.

// bulkSweep bounds what one Tick looks at: the ports of held blocks whose
// mappings it checks (at least one block's), and block slots it passes
// over.
const (
	bulkSweepPorts = 1024
	bulkSweepSlots = 256
)

// bulkBlocks is one worker's bulk blocks. Block b of an outside address
// is the units s.units[w][b*per:(b+1)*per].
type bulkBlocks struct {
	per   int      // units a block
	nb    int      // blocks per outside address
	addrs []uint32 // the outside addresses
	// free[ai]: the address's free blocks; live[ai][b]: the mappings
	// (TCP and UDP) in block b's ports while a host holds it, -1 while
	// free; holder[ai][b]: the inside address holding it.
	free   [][]uint16
	live   [][]int32
	holder [][]uint32
	// hosts: inside address → the block it holds (an inside host has
	// one outside address, so one block per worker).
	hosts mapIndex
	// unitBlock[u]: the block unit u (port/PortUnit) belongs to.
	unitBlock []uint16
	keep      int // ai*nb+b of the block allocateBulk takes a port from (not freed meanwhile); -1: none
	sweep     int // Tick's cursor, ai*nb+b
}

func newBulkBlocks(s *mapStore, w int) *bulkBlocks {
	per := s.block / flowsteer.PortUnit
	units := s.units[w]
	bb := &bulkBlocks{per: per, nb: len(units) / per, addrs: s.addrs, keep: -1, unitBlock: make([]uint16, 65536/flowsteer.PortUnit)}
	for b := range bb.nb {
		for _, u := range units[b*per : (b+1)*per] {
			bb.unitBlock[u] = uint16(b)
		}
	}
	n := len(s.addrs)
	bb.free, bb.live, bb.holder = make([][]uint16, n), make([][]int32, n), make([][]uint32, n)
	for ai := range n {
		bb.free[ai] = make([]uint16, bb.nb)
		for b := range bb.nb {
			bb.free[ai][b] = uint16(b)
		}
		rand.Shuffle(bb.nb, func(i, j int) { bb.free[ai][i], bb.free[ai][j] = bb.free[ai][j], bb.free[ai][i] })
		bb.live[ai] = make([]int32, bb.nb)
		for b := range bb.live[ai] {
			bb.live[ai][b] = -1
		}
		bb.holder[ai] = make([]uint32, bb.nb)
	}
	bb.hosts.init(nil, max(n*bb.nb, 1))
	return bb
}

func bulkKey(in uint32) uint64 { return uint64(in)<<1 | 1 }

// allocateBulk picks a port for a new mapping of k's inside endpoint in
// the block its host holds on this worker, taking a free one first if it
// holds none.
func (e *SNAT) allocateBulk(t *conntrack.Table, mt *mapTable, addr uint32, k *conntrack.Tuple, now int64) (uint16, bool) {
	m := e.mw
	bb := m.bulk
	e.ct = t
	ai := mt.ai
	v, ok := bb.hosts.get(bulkKey(k.Src))
	b := int(v)
	if !ok {
		if !e.ms.fromInside(k.Src) {
			return 0, false // blocks are for the inside networks' hosts
		}
		f := &bb.free[ai]
		if len(*f) == 0 {
			return 0, false
		}
		b = int((*f)[len(*f)-1])
		if !m.noteUse(blockUse{kind: blockAllocated, block: b, in: k.Src, out: addr}) {
			return 0, false // not handed out unlogged
		}
		*f = (*f)[:len(*f)-1]
		bb.live[ai][b], bb.holder[ai][b] = 0, k.Src
		bb.hosts.put(bulkKey(k.Src), uint16(b))
	}
	bb.keep = ai*bb.nb + b
	p, ok := e.pickInBlock(t, mt, addr, k, e.ms.units[e.worker][b*bb.per:(b+1)*bb.per], now)
	bb.keep = -1
	return p, ok
}

// bulkReleased counts a mapping of port (outside address ai) gone, and
// gives its block back when it was the last.
func (m *mapWorker) bulkReleased(ai int, port uint16) {
	bb := m.bulk
	b := int(bb.unitBlock[port/flowsteer.PortUnit])
	if bb.live[ai][b]--; bb.live[ai][b] == 0 && ai*bb.nb+b != bb.keep {
		m.freeBlock(ai, b)
	}
}

// freeBlock gives held block b of outside address ai back to the pool,
// unless its line cannot be noted (a later sweep frees it).
func (m *mapWorker) freeBlock(ai, b int) {
	bb := m.bulk
	in := bb.holder[ai][b]
	if !m.noteUse(blockUse{kind: blockReleased, block: b, in: in, out: bb.addrs[ai]}) {
		return
	}
	bb.hosts.del(bulkKey(in))
	bb.live[ai][b] = -1
	bb.free[ai] = append(bb.free[ai], uint16(b))
}

// sweepBulk looks at held blocks, about bulkSweepPorts ports' worth
// (passing over at most bulkSweepSlots slots), from where the last sweep
// stopped: their mappings that ended are released, and a block left
// without any goes back.
func (e *SNAT) sweepBulk() {
	s, m := e.ms, e.mw
	bb := m.bulk
	t := e.ct
	total := bb.nb * len(s.addrs)
	if t == nil || total == 0 {
		return
	}
	now := t.Now()
	held := 0
	for range min(total, bulkSweepSlots) {
		c := bb.sweep
		if bb.sweep++; bb.sweep == total {
			bb.sweep = 0
		}
		ai, b := c/bb.nb, c%bb.nb
		if bb.live[ai][b] < 0 {
			continue
		}
		bb.keep = c
		for _, u := range s.units[e.worker][b*bb.per : (b+1)*bb.per] {
			for off := range uint16(flowsteer.PortUnit) {
				p := u*flowsteer.PortUnit + off
				for pi := range m.tabs {
					mt := &m.tabs[pi][ai]
					if mt.inUse(p-s.lo) && s.expired(t, mt, p, now) {
						s.release(m, mt, p)
					}
				}
			}
		}
		bb.keep = -1
		if bb.live[ai][b] == 0 {
			m.freeBlock(ai, b)
		}
		if held += bb.per * flowsteer.PortUnit; held >= bulkSweepPorts {
			return
		}
	}
}
