package nat

import (
	"fmt"
	"net/netip"
	"strings"
	"time"

	"github.com/junction-dataplane/junction/elements"
	"github.com/junction-dataplane/junction/elements/conntrack"
	"github.com/junction-dataplane/junction/elements/flowsteer"
)

// Port blocks (port_block = N), in the manner of RFC 7422: a carrier
// that must say which subscriber used an outside address and port at a
// given time logs (or computes) a block per subscriber instead of a line
// per mapping. Ports are handed out in units of 16 consecutive ports
// (flowsteer.Port: each unit belongs to one worker), a block is N/16 of
// a worker's units, and an inside host's mappings on a worker come only
// from its block there: same parity first, then any free port of the
// block, then ports whose mappings ended; a flow finding none is dropped
// ("ports exhausted"), never given a port outside the block. Its flows are
// spread over the workers by source port, so it can have up to N mappings
// per worker.
//
// Deterministic (the default): the k-th inside address (the `inside`
// networks counted in order) has on each worker the k-th block of the
// units that worker owns (ascending), so its ports follow from its
// address and the rule, which is logged once at start; each host's block
// on a worker is also logged when that worker first maps a port of it.
// Bulk (port_block_alloc = "bulk", portbulk.go): a host takes a free block
// at its first mapping on a worker and gives it back once its mappings
// have ended, each logged. Either way the new mapping only tests a bit or
// looks its host up and notes the event; Tick writes the lines, off the
// packets' path.

// maxPortBlock bounds port_block (a block is scanned for a free port).
const maxPortBlock = 4096

func (c *SNATConfig) validatePortBlock() error {
	switch c.PortBlockAlloc {
	case "", "deterministic":
		c.bulk = false
	case "bulk":
		c.bulk = true
	default:
		return elements.Errorf("port_block_alloc", "%q: want deterministic or bulk", c.PortBlockAlloc)
	}
	if c.PortBlock == 0 {
		if c.PortBlockAlloc != "" {
			return elements.Errorf("port_block_alloc", "needs port_block")
		}
		return nil
	}
	if c.PortBlock < 0 || c.PortBlock%flowsteer.PortUnit != 0 || c.PortBlock > maxPortBlock {
		return elements.Errorf("port_block", "%d: want a multiple of %d up to %d (0: off)", c.PortBlock, flowsteer.PortUnit, maxPortBlock)
	}
	if !c.eim || len(c.inside) == 0 {
		return elements.Errorf("port_block", "needs inside networks and mapping = \"endpoint-independent\"")
	}
	return nil
}

// setupBlocks lists, per worker, the whole units of the range it owns, and
// logs the rule with logf.
func (s *mapStore) setupBlocks(block int, bulk bool, logf func(string, ...any)) {
	s.block, s.bulk = block, bulk
	s.units = make([][]uint16, s.workers)
	for u := (int(s.lo) + flowsteer.PortUnit - 1) / flowsteer.PortUnit; (u+1)*flowsteer.PortUnit-1 <= int(s.hi); u++ {
		w := s.owner(uint16(u * flowsteer.PortUnit))
		s.units[w] = append(s.units[w], uint16(u))
	}
	hosts := -1
	for _, us := range s.units {
		if n := len(us) * flowsteer.PortUnit / block; hosts < 0 || n < hosts {
			hosts = n
		}
	}
	if bulk {
		logf("bulk port blocks of %d (RFC 7422): an inside address takes a free %d-port block of a worker's ports "+
			"(units of %d ports owned by the worker) at its first mapping there and gives it back once its mappings have "+
			"ended, each logged; %d blocks per outside address on the smallest worker",
			block, block, flowsteer.PortUnit, hosts)
		return
	}
	logf("port blocks of %d (RFC 7422): the k-th inside address gets on worker w the k-th %d-port "+
		"block of w's ports (units of %d ports owned by w, ascending); %d inside addresses have a block on every worker",
		block, block, flowsteer.PortUnit, hosts)
}

// hostIndex is a's place among the inside networks' addresses.
func (s *mapStore) hostIndex(a uint32) (int, bool) {
	base := 0
	for _, p := range s.inside {
		if p.Contains(a) {
			return base + int(a-p.Addr), true
		}
		base += int(uint64(1) << (32 - p.Bits))
	}
	return 0, false
}

// allocateBlock picks a port for a new mapping of k's inside endpoint in
// its host's block on this worker.
func (e *SNAT) allocateBlock(t *conntrack.Table, mt *mapTable, addr uint32, k *conntrack.Tuple, now int64) (uint16, bool) {
	s, m := e.ms, e.mw
	if s.bulk {
		return e.allocateBulk(t, mt, addr, k, now) // portbulk.go
	}
	i, ok := s.hostIndex(k.Src)
	per := s.block / flowsteer.PortUnit
	units := s.units[e.worker]
	if !ok || (i+1)*per > len(units) {
		return 0, false
	}
	p, ok := e.pickInBlock(t, mt, addr, k, units[i*per:(i+1)*per], now)
	if ok && m.blockLogged[i>>6]&(1<<(i&63)) == 0 && m.noteUse(blockUse{kind: blockInUse, block: i, in: k.Src, out: addr}) {
		m.blockLogged[i>>6] |= 1 << (i & 63)
	}
	return p, ok
}

// pickInBlock takes a free port of the block made of units for a new
// mapping of k's inside endpoint: of the inside port's parity first, then
// any, then one whose mapping ended.
func (e *SNAT) pickInBlock(t *conntrack.Table, mt *mapTable, addr uint32, k *conntrack.Tuple, units []uint16, now int64) (uint16, bool) {
	s, m := e.ms, e.mw
	for pass := range 3 {
		for _, u := range units {
			for off := range uint16(flowsteer.PortUnit) {
				p := u*flowsteer.PortUnit + off
				if pass == 0 && p&1 != k.Sport&1 {
					continue
				}
				if mt.inUse(p - s.lo) { // a port of this worker's: its bitmap
					if pass < 2 || !s.expired(t, mt, p, now) {
						continue
					}
					s.release(m, mt, p)
				}
				if e.steer.IsPublic(k.Proto, addr, p) {
					continue
				}
				s.take(mt, p)
				return p, true
			}
		}
	}
	return 0, false
}

// Kinds of block events (blockUse).
const (
	blockInUse     = iota // a deterministic block's first mapping on a worker
	blockAllocated        // a bulk block taken by a host
	blockReleased         // a bulk block given back
)

var blockEvents = [...]string{"in use", "allocated", "released"}

// blockUse is an event of a block on a worker, to be logged.
type blockUse struct {
	kind uint8
	// block: the host's index (hostIndex) for a deterministic block, the
	// block's among the worker's blocks for a bulk one.
	block   int
	in, out uint32 // the host's inside address and its outside address
}

// maxBlockUses bounds the block events noted between two Ticks. A
// deterministic block's first use that finds the list full is noted at
// its host's next new mapping; a bulk block is neither taken nor given
// back without its line (the flow is dropped, the block stays held until
// a later look).
const maxBlockUses = 256

// noteUse notes a block event for Tick to log: false when the list is
// full.
func (m *mapWorker) noteUse(u blockUse) bool {
	if m.nuses == len(m.uses) {
		return false
	}
	m.uses[m.nuses] = u
	m.nuses++
	return true
}

// Tick writes the block events noted since the last Tick and, with bulk
// blocks, looks at a few held blocks for mappings that ended.
// NextTick: every millisecond while port block events wait to be logged;
// otherwise nothing is due (bulk blocks are swept at the idle cadence:
// nothing needs a free block while no packet comes).
func (e *SNAT) NextTick(now int64) int64 {
	if m := e.mw; m != nil && m.nuses != 0 {
		return now
	}
	return elements.NoWake
}

func (e *SNAT) Tick(int64) {
	m := e.mw
	if m == nil {
		return
	}
	if m.bulk != nil {
		e.sweepBulk()
	}
	if m.nuses != 0 {
		e.logBlocks(m)
	}
}

// logBlocks writes a line per noted event: when, the inside address, the
// outside address and the block's ports on this worker (ranges of whole
// units), then clears the list.
func (e *SNAT) logBlocks(m *mapWorker) {
	s := e.ms
	per := s.block / flowsteer.PortUnit
	now := time.Now().UTC()
	for _, u := range m.uses[:m.nuses] {
		units := s.units[e.worker][u.block*per : (u.block+1)*per]
		var b strings.Builder
		for j := 0; j < len(units); {
			k := j + 1
			for k < len(units) && units[k] == units[k-1]+1 {
				k++
			}
			if j > 0 {
				b.WriteByte(',')
			}
			fmt.Fprintf(&b, "%d-%d", int(units[j])*flowsteer.PortUnit, int(units[k-1]+1)*flowsteer.PortUnit-1)
			j = k
		}
		e.logf("%s port block %s: %v -> %v ports %s", now.Format("2006-01-02T15:04:05.000Z"), blockEvents[u.kind],
			addrOf(u.in), addrOf(u.out), b.String())
	}
	m.nuses = 0
}

// addrOf is a as a netip.Addr.
func addrOf(a uint32) netip.Addr {
	return netip.AddrFrom4([4]byte{byte(a >> 24), byte(a >> 16), byte(a >> 8), byte(a)})
}

var _ elements.TickScheduler = (*SNAT)(nil)
