package nat

import (
	"math/bits"

	"github.com/junction-dataplane/junction/elements/conntrack"
	"github.com/junction-dataplane/junction/elements/flowsteer"
	"github.com/junction-dataplane/junction/packet"
)

// SNAT's port choice.
//
// A new flow needs a port P for which the reply tuple (server, sport →
// public address, P) is free in the worker's table and, with W workers,
// hashes to this worker. Which ports hash home depends on the server's
// address and port too, so no free list can be kept ahead of time; and
// walking from the flow's own port would walk through
// every port already taken when many flows share a few source ports and
// one server: thousands of lookups a flow.
//
// So each destination gets its own walk, in the manner of RFC 6056's
// double-hash port selection (algorithm 4): a keyed hash of the
// destination (server address, server port, protocol, public address)
// gives an offset into the range and one of cursorSlots cursors; the
// cursor counts how far walks through that slot have gone, and a walk
// goes on from it. The ports one destination has had are therefore behind
// its cursor, and a new flow looks at the ports after them: about W ports
// (one hash each) and one conntrack lookup when the destination's ports are
// mostly free, 1/(1-u) lookups on average with a share u in use however
// many flows that is, since each walk resumes where the previous ended
// instead of stepping over the taken ports again. Destinations that share
// a slot share its cursor but not their offsets (harmless: each walk still
// moves over free ports). The offset is keyed by a per-instance random
// seed, so the ports of a destination are not predictable from outside.
//
// The flow's own port is tried first when it is in the range (port
// preservation: one hash and one lookup), then flowCandidates ports drawn
// from the flow's tuple and public address alone (no key, no history), so
// that a flow picked up again after a restart gets back the port it had
// when that was the first of them to hash home and be free. Like Linux's
// port preservation, these are predictable; the walk below is not. Each new flow makes at most
// maxLookups lookups after that and looks at no more than maxCandidates
// ports; when they find nothing the flow is dropped and counted ("ports
// exhausted"), and the cursor keeps what was walked, so a retry looks
// further on.

const (
	// cursorSlots is the number of per-destination cursors (a power of
	// two; 8 KiB per SNAT instance).
	cursorSlots = 4096
	// maxCandidates bounds the ports one new flow looks at (a hash
	// each); with W workers about one in W hashes home.
	maxCandidates = 4096
	// maxLookups bounds the conntrack lookups of one new flow's walk.
	maxLookups = 128
	// flowCandidates is the number of ports drawn from the flow's own
	// tuple before the walk: with W workers about flowCandidates/W of
	// them hash home (one hash each, and a lookup for those).
	flowCandidates = 8
)

// destHash is the keyed hash of a destination seen from one public
// address: its top 32 bits place the destination's walk in the range, bits
// 20–31 pick its cursor.
func (e *SNAT) destHash(srv, pub uint32, sport uint16, proto uint8) uint64 {
	hi, lo := bits.Mul64(uint64(srv)<<32|uint64(pub)^e.seed[0], uint64(sport)<<8|uint64(proto)^e.seed[1])
	return hi ^ lo
}

// prepare prefetches what the batch's new flows will claim first: the
// reply tuple that keeps the flow's own port (the usual choice while the
// destination has free ports), and computes its hash for try.
func (e *SNAT) prepare(b *packet.Batch) {
	var t *conntrack.Table
	m := 0
	e.now, e.nm, e.nq, e.gtab, e.full1 = 0, 0, 0, nil, [2]uint8{}
	for i, p := range b.Pkts {
		e.nf.at[i] = 0
		e.mat[i] = 0
		tt, c := undecided(p, conntrack.FlagSNATDone)
		if c == nil || e.hairpin && c.Flags&conntrack.FlagDNAT == 0 {
			continue
		}
		k := &c.T[0]
		if e.mw != nil && e.mapped(k) {
			if pi := protoIndex(k.Proto); e.full1[pi] == 2 {
				// Known full and dry this batch (one outside
				// address, warmMapped asked once): only marked
				// and its filter line queued, without the call.
				f := &e.mw.filt
				fb := f.pos(endpointKey(k.Src, k.Sport) | uint64(pi)<<1)
				e.fpf[e.nq&(packet.MaxBatch-1)] = f.line(fb)
				if e.nq++; e.nq%warmGroup == 0 {
					conntrack.Prefetch(e.fpf[e.nq-warmGroup : e.nq])
				}
				e.mat[i&(packet.MaxBatch-1)], e.fbit[i&(packet.MaxBatch-1)] = matFull, fb
			} else {
				e.warmMapped(tt, k, i)
			}
		}
		if k.Sport < e.lo || k.Sport > e.hi {
			continue
		}
		if t == nil {
			t = tt
		} else if tt != t {
			continue // another table's flow: hashed by try
		}
		r := &e.nf.keys[m]
		*r = c.T[1]
		r.Dst = e.address(k)
		r.Dport = k.Sport
		if r.Proto == packet.ProtoICMP {
			r.Sport = k.Sport
		}
		m++
		e.nf.at[i] = uint16(m)
	}
	e.nf.t = t
	e.nf.n = m
	if e.nq > 0 {
		conntrack.Prefetch(e.fpf[e.nq-e.nq%warmGroup : e.nq])
		for j := range min(e.nm, claimAhead) {
			e.warmLines(j) // their filter lines were asked for first
		}
	}
	if t != nil {
		// The first claimAhead keys are prefetched now, each
		// further one when bind claims the key claimAhead before it.
		for i := range m {
			e.nf.hs[i] = t.Bucket(&e.nf.keys[i])
			if i < claimAhead {
				t.WarmClaim(e.nf.hs[i])
			}
		}
	}
}

// claimAhead is how many new flows ahead of the one bind claims for the
// index memory of the claims is prefetched: a claim takes ≈ 50 ns, a
// miss ≈ 100–150 ns on the machines measured.
const claimAhead = 8

// address is the outside address of the inside host of tuple k.
func (e *SNAT) address(k *conntrack.Tuple) uint32 {
	if len(e.to) > 1 {
		return e.to[Target(packet.FlowHashV4(k.Src, k.Src, 0, 0, 0), len(e.to))]
	}
	return e.to[0]
}

// bind picks the outside address (by the inside host, so that a host keeps
// one address) and a port whose reply tuple is free and hashes home, and
// makes it the flow's reply tuple. pos is the packet's position in the
// batch (prepare's hash of the flow's own port).
func (e *SNAT) bind(t *conntrack.Table, c *conntrack.Conn, idx uint32, pos int) bool {
	k := &c.T[0]
	var reply conntrack.Tuple
	var addr uint32
	kept := k.Sport >= e.lo && k.Sport <= e.hi
	e.pos = pos
	e.hsrc, e.hsport = c.T[1].Src, c.T[1].Sport
	e.byPort = false
	if e.workers > 1 {
		// A hairpinned flow's reply comes from a DNAT backend, which
		// FromDevice hashes as the public endpoint it serves.
		e.hsrc, e.hsport = e.steer.Public(k.Proto, e.hsrc, e.hsport)
		// With the steering by port, the replies of the flows the
		// mapping serves come to the owner of their port (DNAT'd
		// endpoints keep the flow hash).
		e.byPort = e.toMapping || e.ms != nil && e.ms.masq != nil && (k.Proto == packet.ProtoTCP || k.Proto == packet.ProtoUDP) &&
			e.hsrc == c.T[1].Src && e.hsport == c.T[1].Sport && !e.steer.IsPublic(k.Proto, e.hsrc, e.hsport)
	}
	a := e.nf.prepared(t, pos)
	if j := int(a) - 1 + claimAhead; a != 0 && j < e.nf.n {
		t.WarmClaim(e.nf.hs[j])
	}
	if e.mapped(k) {
		if !e.fullNoMapping(pos) {
			if e.bindMapped(t, c, idx, pos) {
				return true
			}
			if e.ms.block > 0 {
				return false // no port outside the host's block: "ports exhausted"
			}
		}
		e.fallbacks++ // per destination, among this worker's ports
	}
	if a != 0 && e.rss == nil {
		// The usual case: the reply tuple that keeps the flow's own
		// port, which prepare built (with the address) and hashed.
		reply = e.nf.keys[a-1]
		addr = reply.Dst
		if e.home(&reply, reply.Dport) && (reply == c.T[1] || e.claim(t, c, idx, &reply, e.nf.hs[a-1])) {
			return true
		}
		kept = false // tried
	} else {
		reply = c.T[1]
		addr = e.address(k)
		reply.Dst = addr
		if e.rss != nil && e.bindRSS(t, c, idx, &reply, addr) {
			return true // a port whose reply needs no handoff (snatrss.go)
		}
	}
	if kept && e.try(t, c, idx, &reply, k.Sport) {
		return true
	}
	// Then a few ports drawn from the flow itself, the same after a
	// restart: a forwarder restarted under load picks each TCP flow up
	// again mid-stream (Conntrack's loose pickup) with an empty table,
	// and the flow keeps working only if it gets the port it had, which
	// it does when that port was its first candidate to hash home and be
	// free (the usual case; a port another flow held then is the
	// exception).
	x := uint64(packet.FlowHashV4(k.Src, k.Dst, k.Sport, k.Dport, k.Proto))<<32 | uint64(addr)
	span := uint32(e.hi-e.lo) + 1
	for range flowCandidates {
		x = (x ^ x>>29) * 0xbf58476d1ce4e5b9
		if e.try(t, c, idx, &reply, e.lo+uint16(uint64(uint32(x>>32))*uint64(span)>>32)) {
			return true
		}
	}
	srvPort := reply.Sport
	if k.Proto == packet.ProtoICMP {
		srvPort = 0 // the identifier is the port being chosen
	}
	h := e.destHash(reply.Src, addr, srvPort, k.Proto)
	off := uint32(uint64(uint32(h>>32)) * uint64(span) >> 32)
	cursor := &e.cursors[h>>20&(cursorSlots-1)]
	n := uint32(*cursor) // < span: only this loop writes it
	stop := e.lookups + maxLookups
	found := false
	for range min(span, maxCandidates) {
		i := off + n
		if i >= span {
			i -= span
		}
		if n++; n == span {
			n = 0
		}
		if e.try(t, c, idx, &reply, e.lo+uint16(i)) {
			found = true
			break
		}
		if e.lookups >= stop {
			break
		}
	}
	*cursor = uint16(n)
	return found
}

// try sets port in reply and, if the reply hashes to this worker and is
// free (or is already the flow's own), makes it flow idx's reply tuple
// and reports true. The check and the change are one index operation
// (ClaimReply), with the hash prepare computed when the tuple is the one
// it prepared.
func (e *SNAT) try(t *conntrack.Table, c *conntrack.Conn, idx uint32, reply *conntrack.Tuple, port uint16) bool {
	reply.Dport = port
	if !e.home(reply, port) {
		return false
	}
	return *reply == c.T[1] || e.claim(t, c, idx, reply, e.nf.hash(t, reply, e.pos))
}

// home completes reply for port (an ICMP echo identifier is both ports)
// and reports whether it may be claimed here: with several workers, it
// hashes to this worker and no reload pinned it elsewhere. Small enough
// to be inlined: one worker decides nothing.
func (e *SNAT) home(reply *conntrack.Tuple, port uint16) bool {
	if reply.Proto == packet.ProtoICMP {
		reply.Sport = port
	}
	return e.workers <= 1 || e.homeWorker(reply, port)
}

// homeWorker is home's check with several workers: the reply's source as
// FromDevice steers it (bind set hsrc, hsport from reply's).
func (e *SNAT) homeWorker(reply *conntrack.Tuple, port uint16) bool {
	if reply.Proto == packet.ProtoICMP {
		// With the masquerade's steering by port, echoes are steered
		// by their identifier both ways (flowsteer): the reply's must
		// be one this worker owns. Without it the steering does not
		// hash identifiers, and any will do.
		return e.ms == nil || e.ms.masq == nil || flowsteer.Port(port, e.workers) == e.worker
	}
	if e.byPort {
		return flowsteer.Port(port, e.workers) == e.worker && !e.steer.IsPublic(reply.Proto, reply.Dst, port) && !e.pinned(reply)
	}
	return Target(packet.FlowHashV4(e.hsrc, reply.Dst, e.hsport, port, reply.Proto), e.workers) == e.worker && !e.pinned(reply)
}

// claim makes reply (h its hash) flow idx's reply tuple if it is free,
// and reports whether it did (the callers first check that it is not
// already the flow's own: then there is nothing to claim). Small enough to
// be inlined.
func (e *SNAT) claim(t *conntrack.Table, c *conntrack.Conn, idx uint32, reply *conntrack.Tuple, h uint32) bool {
	e.lookups++
	ok := t.ClaimReply(idx, reply, h)
	if ok {
		c.Flags |= conntrack.FlagSNAT
	}
	return ok
}
