package nat

import (
	"github.com/junction-dataplane/junction/elements"
	"github.com/junction-dataplane/junction/elements/conntrack"
	"github.com/junction-dataplane/junction/elements/flowsteer"
)

// Deterministic port blocks (port_block = N), in the manner of RFC 7422:
// a carrier that must say which subscriber used an outside address and
// port at a given time can compute it from the address and the rule,
// instead of logging every mapping. The k-th inside address (the `inside`
// networks counted in order) has on each worker the k-th block of N/16
// units of the ports that worker owns (units of 16 consecutive ports,
// flowsteer.Port), and its mappings come only from there: same parity
// first, then any free port of the block, then ports whose mappings ended;
// a flow finding none is dropped ("ports exhausted"), never given a port
// outside the block.
// Its flows are spread over the workers by source port, so it can have up
// to N mappings per worker. The rule is logged once, at start.

// maxPortBlock bounds port_block (a block is scanned for a free port).
const maxPortBlock = 4096

func (c *SNATConfig) validatePortBlock() error {
	if c.PortBlock == 0 {
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
func (s *mapStore) setupBlocks(block int, logf func(string, ...any)) {
	s.block = block
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
	i, ok := s.hostIndex(k.Src)
	per := s.block / flowsteer.PortUnit
	units := s.units[e.worker]
	if !ok || (i+1)*per > len(units) {
		return 0, false
	}
	for pass := range 3 {
		for _, u := range units[i*per : (i+1)*per] {
			for off := range uint16(flowsteer.PortUnit) {
				p := u*flowsteer.PortUnit + off
				if pass == 0 && p&1 != k.Sport&1 {
					continue
				}
				if mt.words[p-s.lo].Load()&wordUsed != 0 {
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
