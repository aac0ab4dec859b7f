package classifier

import (
	"encoding/binary"
	"slices"
)

// A program is the whole rule list compiled into one decision graph, as
// Click's Classifier and BPF do: a flat slice of tests, each naming the
// instruction to go to when it is true (jt) and when it is false (jf). A
// jump target >= 0 is an instruction index; a negative target t ends the
// evaluation with output port ^t (^nports is "no match"). Rule i's false
// exit is rule i+1's entry, so the first matching rule wins without a loop
// over rules, and and/or/not cost nothing: they are only jump targets
// (short-circuit evaluation of the tree). Every jump goes forward, so an
// evaluation takes at most len(ins) steps.
type program struct {
	ins    []insn
	entry  int32
	nports int
	// needProto is set when some test reads the IP protocol or the ports,
	// so the per-packet header walk is skipped for rules like (arp, ip, -).
	needProto bool
}

// insn is one test. It is 56 bytes; the IPv6 operands stay inline because a
// rule set is small and a pointer would cost a dependent load.
type insn struct {
	op     primOp
	dir    uint8
	val    uint32
	mask   uint32
	jt, jf int32
	a6, m6 [2]uint64
}

// compile builds the program for parsed rules; a nil tree is "-".
func compile(rules []*node) *program {
	pr := &program{nports: len(rules)}
	c := &compiler{}
	// Code is emitted backwards (last rule, right operand first), so that
	// every jump target exists when its jump is emitted; the slice is
	// reversed at the end, which turns every jump into a forward one.
	next := ^int32(len(rules))
	for i := len(rules) - 1; i >= 0; i-- {
		if rules[i] == nil {
			next = ^int32(i)
			continue
		}
		next = c.gen(rules[i], ^int32(i), next)
	}
	n := int32(len(c.ins))
	remap := func(t int32) int32 {
		if t < 0 {
			return t
		}
		return n - 1 - t
	}
	pr.ins = make([]insn, n)
	for i, in := range c.ins {
		in.jt, in.jf = remap(in.jt), remap(in.jf)
		pr.ins[n-1-int32(i)] = in
		switch in.op {
		case pProto, pProto4, pProto6, pPort:
			pr.needProto = true
		}
	}
	pr.entry = remap(next)
	pr.thread()
	return pr
}

// fact is a test's known outcome on some path.
type fact struct {
	i   int32
	res bool
}

// maxFacts bounds what thread remembers per instruction; forgetting a fact
// only loses an optimization.
const maxFacts = 64

// thread shortens jumps over tests whose outcome is already known, as
// Click's Classifier optimizes its decision tree: in (tcp and dst port 22,
// tcp and dst port 80) the second "tcp" is not tested again, and after
// "arp" was false "arp request" is not tested at all. For each instruction,
// in order (every jump is forward, so its predecessors are done), the facts
// that hold on every path into it are the intersection of those on its
// incoming edges; an edge whose target's outcome those facts imply is
// redirected past it. Redirecting only removes paths into a node or adds
// one carrying at least its facts, so the facts already computed stay true.
// Instructions left unreachable are dropped.
func (pr *program) thread() {
	n := len(pr.ins)
	in := make([][]fact, n) // facts on every path into i; nil = no path yet
	seen := make([]bool, n)
	follow := func(f []fact, t int32) int32 {
		for t >= 0 {
			known, r := pr.implied(f, t)
			if !known {
				break
			}
			if len(f) < maxFacts {
				f = append(f, fact{t, r})
			}
			if r {
				t = pr.ins[t].jt
			} else {
				t = pr.ins[t].jf
			}
		}
		if t >= 0 {
			if !seen[t] {
				seen[t], in[t] = true, slices.Clone(f)
			} else {
				in[t] = slices.DeleteFunc(in[t], func(x fact) bool { return !slices.Contains(f, x) })
			}
		}
		return t
	}
	pr.entry = follow(nil, pr.entry)
	for i := range pr.ins {
		if !seen[i] {
			continue
		}
		base := in[i][:len(in[i]):len(in[i])]
		pr.ins[i].jt = follow(append(base, fact{int32(i), true}), pr.ins[i].jt)
		pr.ins[i].jf = follow(append(base, fact{int32(i), false}), pr.ins[i].jf)
	}
	// Drop unreachable instructions.
	idx := make([]int32, n)
	var out []insn
	for i, x := range pr.ins {
		idx[i] = int32(len(out))
		if seen[i] {
			out = append(out, x)
		}
	}
	re := func(t int32) int32 {
		if t < 0 {
			return t
		}
		return idx[t]
	}
	for i := range out {
		out[i].jt, out[i].jf = re(out[i].jt), re(out[i].jf)
	}
	pr.entry = re(pr.entry)
	pr.ins = out
}

// implied reports whether facts f decide test t, and its outcome.
func (pr *program) implied(f []fact, t int32) (known, res bool) {
	b := &pr.ins[t]
	for _, x := range f {
		a := &pr.ins[x.i]
		if a.op == b.op && a.dir == b.dir && a.val == b.val && a.mask == b.mask && a.a6 == b.a6 && a.m6 == b.m6 {
			return true, x.res
		}
		// What a packet's EtherType (or ARP opcode) rules out.
		etherA, etherB := a.val, b.val
		if a.op == pARPOp {
			etherA = etherARP
		}
		if b.op == pARPOp {
			etherB = etherARP
		}
		aEther := a.op == pEther || a.op == pARPOp
		bEther := b.op == pEther || b.op == pARPOp
		switch {
		case aEther && bEther && x.res && etherA != etherB:
			return true, false // one EtherType excludes the others
		case a.op == pARPOp && x.res && b.op == pEther:
			return true, true // etherB is ARP here
		case a.op == pARPOp && x.res && b.op == pARPOp:
			return true, false // another opcode
		case a.op == pEther && !x.res && a.val == etherARP && b.op == pARPOp:
			return true, false // not ARP at all
		}
	}
	return false, false
}

type compiler struct{ ins []insn }

// gen emits the code for n that continues at t when n is true and at f
// when it is false, and returns its entry.
func (c *compiler) gen(n *node, t, f int32) int32 {
	switch n.kind {
	case nNot:
		return c.gen(n.l, f, t)
	case nAnd:
		r := c.gen(n.r, t, f)
		return c.gen(n.l, r, f)
	case nOr:
		r := c.gen(n.r, t, f)
		return c.gen(n.l, t, r)
	}
	p := n.p
	c.ins = append(c.ins, insn{op: p.op, dir: p.dir, val: p.val, mask: p.mask, a6: p.a6, m6: p.m6, jt: t, jf: f})
	return int32(len(c.ins) - 1)
}

const (
	etherARP  = 0x0806
	etherIPv4 = 0x0800
	etherIPv6 = 0x86dd
	etherVLAN = 0x8100 // 802.1Q customer tag
	etherQinQ = 0x88a8 // 802.1ad service tag
	// noEther and noProto never equal an operand (those fit in 16 and 8
	// bits): a frame too short to show a field matches no test of it.
	noEther = 1 << 16
	noProto = 1 << 8
	// maxExtHeaders bounds the IPv6 extension-header walk.
	maxExtHeaders = 8
)

// fields are the facts about one packet the tests read, extracted once per
// packet before the program runs. Addresses are read in place by the tests
// (only rules with host/net need them).
type fields struct {
	etype uint32 // EtherType, or noEther
	ver   uint8  // 4 or 6 when the fixed IP header is in the frame, else 0
	ports bool   // sport/dport hold a TCP or UDP header's ports
	proto uint16 // IPv4 protocol or IPv6 fixed-header next header, or noProto
	upper uint16 // the protocol after IPv6 extension headers (IPv4: proto)
	sport uint16
	dport uint16
}

// load fills f from frame d whose network header starts at l3.
func (f *fields) load(d []byte, l3 int, needProto bool) {
	f.etype, f.proto, f.upper = noEther, noProto, noProto
	if len(d) < 14 {
		return
	}
	f.etype = uint32(binary.BigEndian.Uint16(d[12:]))
	switch f.etype {
	case etherIPv4:
		if l3+20 > len(d) {
			return
		}
		f.ver = 4
		if needProto {
			f.loadIPv4(d[l3:])
		}
	case etherIPv6:
		if l3+40 > len(d) {
			return
		}
		f.ver = 6
		if needProto {
			f.loadIPv6(d[l3:])
		}
	}
}

// loadIPv4 reads the protocol and, in a first (or only) fragment whose
// header length is sane, the ports. The L4 header must lie within both the
// frame and the IP total length (Ethernet padding is not a port).
func (f *fields) loadIPv4(h []byte) {
	f.proto = uint16(h[9])
	f.upper = f.proto
	if f.proto != 6 && f.proto != 17 {
		return
	}
	end := min(int(binary.BigEndian.Uint16(h[2:])), len(h))
	ihl := int(h[0]&0x0f) * 4
	if ihl < 20 || binary.BigEndian.Uint16(h[6:])&0x1fff != 0 || ihl+4 > end {
		return
	}
	f.ports = true
	f.sport = binary.BigEndian.Uint16(h[ihl:])
	f.dport = binary.BigEndian.Uint16(h[ihl+2:])
}

// loadIPv6 reads the fixed header's next header, then walks the common
// extension headers (hop-by-hop, routing, fragment, destination options,
// AH) to the upper-layer protocol. Ports are read only in a first fragment
// (or an unfragmented packet) whose L4 header lies within the frame and the
// payload length.
func (f *fields) loadIPv6(h []byte) {
	nh := h[6]
	f.proto = uint16(nh)
	end := min(40+int(binary.BigEndian.Uint16(h[4:])), len(h))
	off := 40
	first := true
	for i := 0; ; i++ {
		if i == maxExtHeaders {
			return // upper stays noProto
		}
		switch nh {
		case 0, 43, 60: // hop-by-hop, routing, destination options: 8-byte units, not counting the first 8
			if off+2 > end {
				return
			}
			nh, off = h[off], off+(int(h[off+1])+1)*8
			continue
		case 51: // AH: 4-byte units, not counting the first 8
			if off+2 > end {
				return
			}
			nh, off = h[off], off+(int(h[off+1])+2)*4
			continue
		case 44: // fragment: fixed 8 bytes
			if off+8 > end {
				return
			}
			first = first && binary.BigEndian.Uint16(h[off+2:])&0xfff8 == 0 // a later header cannot undo a non-first one
			nh, off = h[off], off+8
			continue
		}
		break
	}
	f.upper = uint16(nh)
	if first && (nh == 6 || nh == 17) && off+4 <= end {
		f.ports = true
		f.sport = binary.BigEndian.Uint16(h[off:])
		f.dport = binary.BigEndian.Uint16(h[off+2:])
	}
}

// classify returns the output port for frame d (network header at l3), or
// pr.nports when no rule matches. It allocates nothing. ct rules see state
// untracked; classifyCt passes the packet's annotation.
func (pr *program) classify(d []byte, l3 int) int { return pr.classifyCt(d, l3, 0) }

// classifyCt is classify for a packet whose connection-tracking state
// (packet.Ct.State) is ct.
func (pr *program) classifyCt(d []byte, l3 int, ct uint8) int {
	var f fields
	f.load(d, l3, pr.needProto)
	ins := pr.ins
	pc := pr.entry
	for pc >= 0 {
		in := &ins[pc]
		var ok bool
		switch in.op {
		case pEther:
			ok = f.etype == in.val
		case pARPOp:
			ok = f.etype == etherARP && l3+8 <= len(d) && uint32(binary.BigEndian.Uint16(d[l3+6:])) == in.val
		case pProto:
			ok = uint32(f.proto) == in.val || uint32(f.upper) == in.val
		case pProto4:
			ok = f.ver == 4 && uint32(f.proto) == in.val
		case pProto6:
			ok = f.ver == 6 && (uint32(f.proto) == in.val || uint32(f.upper) == in.val)
		case pPort:
			ok = f.ports && (in.dir&dirSrc != 0 && uint32(f.sport) == in.val ||
				in.dir&dirDst != 0 && uint32(f.dport) == in.val)
		case pNet4:
			if f.ver == 4 {
				h := d[l3 : l3+20]
				ok = in.dir&dirSrc != 0 && binary.BigEndian.Uint32(h[12:])&in.mask == in.val ||
					in.dir&dirDst != 0 && binary.BigEndian.Uint32(h[16:])&in.mask == in.val
			}
		case pCt:
			ok = uint32(ct) == in.val
		case pVLAN:
			// The outermost tag, 802.1Q or 802.1ad (QinQ's service tag).
			if (f.etype == etherVLAN || f.etype == etherQinQ) && len(d) >= 16 {
				vid := uint32(binary.BigEndian.Uint16(d[14:]) & 0x0fff)
				ok = in.val == anyVLAN || vid == in.val
			}
		case pNet6:
			if f.ver == 6 {
				h := d[l3 : l3+40]
				ok = in.dir&dirSrc != 0 && match6(h[8:24], in) ||
					in.dir&dirDst != 0 && match6(h[24:40], in)
			}
		}
		if ok {
			pc = in.jt
		} else {
			pc = in.jf
		}
	}
	return int(^pc)
}

func match6(a []byte, in *insn) bool {
	_ = a[15]
	return binary.BigEndian.Uint64(a)&in.m6[0] == in.a6[0] && binary.BigEndian.Uint64(a[8:])&in.m6[1] == in.a6[1]
}
