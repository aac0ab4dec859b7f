package classifier

import (
	"fmt"
	"net/netip"
	"strconv"
	"strings"

	"github.com/junction-dataplane/junction/internal/suggest"
)

// This file turns one rule's text into an expression tree. Parsing happens
// once, when the config is validated; packets only ever see the compiled
// program (compile.go).
//
// Grammar (precedence: not > and > or; all binary operators associate left):
//
//	rule      = "-" | expr
//	expr      = term { ("or" | "||") term }
//	term      = factor { ("and" | "&&") factor }
//	factor    = ("not" | "!") factor | "(" expr ")" | primitive
//	primitive = "arp" [ "request" | "reply" ]
//	          | "ip" | "ip6" | "tcp" | "udp" | "icmp" | "icmp6"
//	          | "proto" ( NUMBER | "tcp" | "udp" | "icmp" | "icmp6" )
//	          | [ "src" | "dst" ] ( "host" ADDR | "net" PREFIX | "port" NUMBER )
//	          | "ct" ( "new" | "established" | "related" | "invalid" | "untracked" )
//	          | "vlan" [ NUMBER ]
//	          | ( "tcp" | "udp" ) primitive   (tcpdump's "tcp dst port 23": one starting with src, dst or port)
//	          | ( "ip" | "ip6" ) primitive    (one starting with src, dst, host, net or proto)

// ParseError is a rule that does not parse: which rule (its output port),
// its text, the 1-based byte column of the offending token and what is
// wrong there.
type ParseError struct {
	Rule int
	Text string
	Col  int
	Msg  string
}

func (e *ParseError) Error() string {
	return fmt.Sprintf("rule %d %q: col %d: %s", e.Rule, e.Text, e.Col, e.Msg)
}

// maxRules bounds the rules of one Classifier. The decision graph grows
// faster than the rule count (10,000 "udp and dst port N" rules took 660 MB
// to check, 4,000 took 150 MB, 1,000 took 40 MB), so the bound is what
// keeps a graph file's check within tens of megabytes; it is far below the
// 65,535 outputs a packet's 16-bit Port annotation could name.
const maxRules = 1024

// maxDepth bounds the nesting of parentheses and negations, so that a
// hostile rule cannot make the parser recurse without end.
const maxDepth = 64

type tokKind uint8

const (
	tEOF tokKind = iota
	tWord
	tLParen
	tRParen
	tNot // "!" or "not"
	tAnd // "&&" or "and"
	tOr  // "||" or "or"
)

type token struct {
	kind tokKind
	col  int    // 1-based byte column
	text string // as written
	low  string // lower-cased, for keywords
}

// lex splits a rule into tokens. Words are maximal runs of anything but
// white space, parentheses and the operator characters, so that addresses
// ("fe80::1", "10.0.0.0/8") stay whole.
func lex(s string) ([]token, *ParseError) {
	var toks []token
	i := 0
	for i < len(s) {
		c := s[i]
		switch {
		case c == ' ' || c == '\t' || c == '\n' || c == '\r':
			i++
		case c == '(':
			toks = append(toks, token{kind: tLParen, col: i + 1, text: "("})
			i++
		case c == ')':
			toks = append(toks, token{kind: tRParen, col: i + 1, text: ")"})
			i++
		case c == '!':
			toks = append(toks, token{kind: tNot, col: i + 1, text: "!"})
			i++
		case c == '&' || c == '|':
			if i+1 < len(s) && s[i+1] == c {
				k := tAnd
				if c == '|' {
					k = tOr
				}
				toks = append(toks, token{kind: k, col: i + 1, text: s[i : i+2]})
				i += 2
				continue
			}
			return nil, &ParseError{Col: i + 1, Msg: fmt.Sprintf("unexpected %q (did you mean %q?)", string(c), string(c)+string(c))}
		default:
			j := i
			for j < len(s) && !strings.ContainsRune(" \t\n\r()!&|", rune(s[j])) {
				j++
			}
			w := s[i:j]
			t := token{kind: tWord, col: i + 1, text: w, low: strings.ToLower(w)}
			switch t.low {
			case "and":
				t.kind = tAnd
			case "or":
				t.kind = tOr
			case "not":
				t.kind = tNot
			}
			toks = append(toks, t)
			i = j
		}
	}
	toks = append(toks, token{kind: tEOF, col: len(s) + 1})
	return toks, nil
}

// Directions a host, net or port primitive looks at.
const (
	dirSrc    = 1
	dirDst    = 2
	dirEither = dirSrc | dirDst
)

// primOp is a primitive test, already reduced to what the program checks.
type primOp uint8

const (
	pEther  primOp = iota + 1 // EtherType == val
	pARPOp                    // ARP with opcode val
	pProto                    // IPv4 protocol / IPv6 next header == val
	pProto4                   // IPv4 and protocol == val
	pProto6                   // IPv6 and next header == val
	pNet4                     // IPv4 address (dir) in val/mask
	pNet6                     // IPv6 address (dir) in a6/m6
	pPort                     // TCP or UDP port (dir) == val
	pCt                       // connection-tracking state (packet.Ct.State) == val
	pVLAN                     // outermost 802.1Q/802.1ad tag present; its VLAN id == val unless val is anyVLAN
)

// anyVLAN is pVLAN's operand for "vlan" without an id: any tagged frame.
const anyVLAN = 1 << 12

type prim struct {
	op     primOp
	dir    uint8
	val    uint32
	mask   uint32
	a6, m6 [2]uint64
}

type nodeKind uint8

const (
	nPrim nodeKind = iota
	nNot
	nAnd
	nOr
)

// node is the expression tree of one rule.
type node struct {
	kind nodeKind
	l, r *node // nNot uses l only
	p    prim
}

// keywords are the words a rule may use, for "did you mean" suggestions.
var keywords = []string{"arp", "request", "reply", "ip", "ip6", "tcp", "udp", "icmp", "icmp6",
	"proto", "src", "dst", "host", "net", "port", "and", "or", "not", "ct", "new", "established", "related", "invalid", "untracked", "vlan"}

type parser struct {
	toks []token
	pos  int
}

func (p *parser) peek() token { return p.toks[p.pos] }
func (p *parser) next() token {
	t := p.toks[p.pos]
	if t.kind != tEOF {
		p.pos++
	}
	return t
}

func errAt(t token, format string, args ...any) *ParseError {
	return &ParseError{Col: t.col, Msg: fmt.Sprintf(format, args...)}
}

// parseRule parses one rule. It returns a nil tree (and no error) for "-".
func parseRule(s string) (*node, *ParseError) {
	toks, err := lex(s)
	if err != nil {
		return nil, err
	}
	if toks[0].kind == tEOF {
		return nil, &ParseError{Col: 1, Msg: "empty rule (write \"-\" to match every packet)"}
	}
	if len(toks) == 2 && toks[0].kind == tWord && toks[0].text == "-" {
		return nil, nil
	}
	p := &parser{toks: toks}
	n, err := p.expr(0)
	if err != nil {
		return nil, err
	}
	switch t := p.peek(); t.kind {
	case tEOF:
		return n, nil
	case tRParen:
		return nil, errAt(t, "unmatched \")\"")
	default:
		return nil, errAt(t, "expected and/or before %q", t.text)
	}
}

func (p *parser) expr(depth int) (*node, *ParseError) {
	l, err := p.term(depth)
	if err != nil {
		return nil, err
	}
	for p.peek().kind == tOr {
		op := p.next()
		r, err := p.operand(op, depth)
		if err != nil {
			return nil, err
		}
		l = &node{kind: nOr, l: l, r: r}
	}
	return l, nil
}

func (p *parser) term(depth int) (*node, *ParseError) {
	l, err := p.factor(depth)
	if err != nil {
		return nil, err
	}
	for p.peek().kind == tAnd {
		op := p.next()
		r, err := p.operand(op, depth)
		if err != nil {
			return nil, err
		}
		l = &node{kind: nAnd, l: l, r: r}
	}
	return l, nil
}

// operand parses the right-hand side of and/or, reporting a missing one
// against the operator that needed it.
func (p *parser) operand(op token, depth int) (*node, *ParseError) {
	if t := p.peek(); t.kind == tEOF || t.kind == tRParen {
		return nil, errAt(t, "missing operand after %q", op.text)
	}
	if op.kind == tOr {
		return p.term(depth)
	}
	return p.factor(depth)
}

func (p *parser) factor(depth int) (*node, *ParseError) {
	t := p.peek()
	switch t.kind {
	case tEOF:
		return nil, errAt(t, "missing operand at end of rule")
	case tRParen:
		if p.pos > 0 && p.toks[p.pos-1].kind == tLParen {
			return nil, errAt(t, "empty parentheses")
		}
		return nil, errAt(t, "unmatched \")\"")
	case tAnd, tOr:
		return nil, errAt(t, "missing operand before %q", t.text)
	case tNot:
		if depth >= maxDepth {
			return nil, errAt(t, "nested more than %d deep", maxDepth)
		}
		p.next()
		if u := p.peek(); u.kind == tEOF || u.kind == tRParen {
			return nil, errAt(u, "missing operand after %q", t.text)
		}
		x, err := p.factor(depth + 1)
		if err != nil {
			return nil, err
		}
		return &node{kind: nNot, l: x}, nil
	case tLParen:
		if depth >= maxDepth {
			return nil, errAt(t, "nested more than %d deep", maxDepth)
		}
		p.next()
		x, err := p.expr(depth + 1)
		if err != nil {
			return nil, err
		}
		switch u := p.peek(); u.kind {
		case tRParen:
			p.next()
			return x, nil
		case tEOF:
			return nil, errAt(t, "unclosed \"(\"")
		default:
			return nil, errAt(u, "expected and/or or \")\" before %q", u.text)
		}
	}
	return p.primitive()
}

func primNode(pr prim) *node { return &node{kind: nPrim, p: pr} }

func (p *parser) primitive() (*node, *ParseError) {
	t := p.next()
	switch t.low {
	case "-":
		return nil, errAt(t, "\"-\" (any packet) must be the whole rule")
	case "arp":
		if u := p.peek(); u.kind == tWord {
			switch u.low {
			case "request":
				p.next()
				return primNode(prim{op: pARPOp, val: 1}), nil
			case "reply":
				p.next()
				return primNode(prim{op: pARPOp, val: 2}), nil
			}
		}
		return primNode(prim{op: pEther, val: 0x0806}), nil
	case "ip":
		return p.qualified(primNode(prim{op: pEther, val: 0x0800}), "src", "dst", "host", "net", "proto")
	case "ip6":
		return p.qualified(primNode(prim{op: pEther, val: 0x86dd}), "src", "dst", "host", "net", "proto")
	case "tcp", "udp":
		return p.qualified(protoNode(t.low), "src", "dst", "port")
	case "icmp", "icmp6":
		return protoNode(t.low), nil
	case "proto":
		return p.proto(t)
	case "src", "dst":
		dir := uint8(dirSrc)
		if t.low == "dst" {
			dir = dirDst
		}
		u := p.peek()
		if u.kind == tWord && (u.low == "host" || u.low == "net" || u.low == "port") {
			p.next()
			return p.operandOf(u, dir)
		}
		if u.kind == tEOF {
			return nil, errAt(u, "missing host, net or port after %q", t.text)
		}
		return nil, errAt(u, "expected host, net or port after %q, found %q", t.text, u.text)
	case "host", "net", "port":
		return p.operandOf(t, dirEither)
	case "ct":
		u := p.peek()
		if u.kind == tWord {
			if v, ok := ctStates[u.low]; ok {
				p.next()
				return primNode(prim{op: pCt, val: v}), nil
			}
			return nil, errAt(u, "unknown ct state %q: want new, established, related, invalid or untracked", u.text)
		}
		return nil, errAt(u, "missing state after \"ct\" (new, established, related, invalid or untracked)")
	case "vlan":
		return p.vlan()
	case "request", "reply":
		return nil, errAt(t, "%q must follow \"arp\"", t.text)
	}
	return nil, errAt(t, "%s", unknownWord(t.text))
}

// qualified parses tcpdump's qualified primitives: "tcp dst port 23" is
// "tcp and dst port 23", "ip host 10.0.0.1" is "ip and host 10.0.0.1".
// When the next word is one of after, the primitive it starts is parsed
// and and-ed with n.
func (p *parser) qualified(n *node, after ...string) (*node, *ParseError) {
	u := p.peek()
	if u.kind != tWord {
		return n, nil
	}
	for _, w := range after {
		if u.low == w {
			r, err := p.primitive()
			if err != nil {
				return nil, err
			}
			return &node{kind: nAnd, l: n, r: r}, nil
		}
	}
	return n, nil
}

// ctStates maps "ct STATE" words to packet.Ct* values (the annotation
// Conntrack writes).
var ctStates = map[string]uint32{"untracked": 0, "new": 1, "established": 2, "related": 3, "invalid": 4}

// protoNode is what tcp, udp, icmp and icmp6 mean: tcp and udp over either
// IP version, icmp as ICMPv4 or ICMPv6, icmp6 as ICMPv6 only.
func protoNode(name string) *node {
	switch name {
	case "tcp":
		return primNode(prim{op: pProto, val: 6})
	case "udp":
		return primNode(prim{op: pProto, val: 17})
	case "icmp6":
		return primNode(prim{op: pProto6, val: 58})
	}
	return &node{kind: nOr, l: primNode(prim{op: pProto4, val: 1}), r: primNode(prim{op: pProto6, val: 58})}
}

func (p *parser) proto(kw token) (*node, *ParseError) {
	u := p.peek()
	if u.kind != tWord {
		return nil, errAt(u, "missing protocol after %q (a number 0-255 or tcp, udp, icmp, icmp6)", kw.text)
	}
	p.next()
	switch u.low {
	case "tcp", "udp", "icmp", "icmp6":
		return protoNode(u.low), nil
	}
	v, err := strconv.ParseUint(u.text, 10, 64)
	if err != nil {
		if isDigits(u.text) {
			return nil, errAt(u, "proto %s out of range 0-255", u.text)
		}
		return nil, errAt(u, "bad protocol %q: want a number 0-255 or tcp, udp, icmp, icmp6", u.text)
	}
	if v > 255 {
		return nil, errAt(u, "proto %s out of range 0-255", u.text)
	}
	return primNode(prim{op: pProto, val: uint32(v)}), nil
}

// vlan parses what follows "vlan": an optional VLAN id 1-4094. Ids 0
// (a priority tag: the frame belongs to no VLAN) and 4095 (reserved) are
// refused, as Linux refuses them for a VLAN device: no frame of a VLAN
// carries them.
func (p *parser) vlan() (*node, *ParseError) {
	u := p.peek()
	if u.kind != tWord || !isDigits(u.text) {
		return primNode(prim{op: pVLAN, val: anyVLAN}), nil
	}
	p.next()
	v, err := strconv.ParseUint(u.text, 10, 64)
	if err != nil || v < 1 || v > 4094 {
		return nil, errAt(u, "vlan %s out of range 1-4094 (0 is a priority tag, 4095 reserved)", u.text)
	}
	return primNode(prim{op: pVLAN, val: uint32(v)}), nil
}

// operandOf parses what follows host, net or port.
func (p *parser) operandOf(kw token, dir uint8) (*node, *ParseError) {
	u := p.peek()
	if u.kind != tWord {
		what := map[string]string{"host": "an address", "net": "a prefix", "port": "a port number"}[kw.low]
		return nil, errAt(u, "missing %s after %q", what, kw.text)
	}
	p.next()
	switch kw.low {
	case "port":
		v, err := strconv.ParseUint(u.text, 10, 64)
		if err != nil && !isDigits(u.text) {
			return nil, errAt(u, "bad port %q: want a number 0-65535", u.text)
		}
		if err != nil || v > 65535 {
			return nil, errAt(u, "port %s out of range 0-65535", u.text)
		}
		return primNode(prim{op: pPort, dir: dir, val: uint32(v)}), nil
	case "host":
		if strings.Contains(u.text, "/") {
			return nil, errAt(u, "host takes an address, not the prefix %q (use net)", u.text)
		}
		a, err := netip.ParseAddr(u.text)
		if err != nil || a.Zone() != "" {
			return nil, errAt(u, "bad address %q", u.text)
		}
		return primNode(netPrim(netip.PrefixFrom(a, a.BitLen()), dir)), nil
	}
	if !strings.Contains(u.text, "/") {
		if _, err := netip.ParseAddr(u.text); err == nil {
			return nil, errAt(u, "net takes a prefix such as %s/24, not the address %q (or use host)", u.text, u.text)
		}
		return nil, errAt(u, "bad prefix %q", u.text)
	}
	pf, err := netip.ParsePrefix(u.text)
	if err != nil {
		return nil, errAt(u, "bad prefix %q", u.text)
	}
	if m := pf.Masked(); m != pf {
		return nil, errAt(u, "prefix %q has bits set beyond /%d (did you mean %s?)", u.text, pf.Bits(), m)
	}
	return primNode(netPrim(pf, dir)), nil
}

// netPrim turns a prefix into the integers the program compares: an IPv4
// prefix as a 32-bit value and mask, an IPv6 one (including IPv4-mapped
// addresses, which only appear in IPv6 headers) as two 64-bit halves.
func netPrim(pf netip.Prefix, dir uint8) prim {
	a, bits := pf.Addr(), pf.Bits()
	if a.Is4() {
		b := a.As4()
		v := uint32(b[0])<<24 | uint32(b[1])<<16 | uint32(b[2])<<8 | uint32(b[3])
		var m uint32
		if bits > 0 {
			m = ^uint32(0) << (32 - bits)
		}
		return prim{op: pNet4, dir: dir, val: v & m, mask: m}
	}
	b := a.As16()
	var hi, lo uint64
	for i := 0; i < 8; i++ {
		hi = hi<<8 | uint64(b[i])
		lo = lo<<8 | uint64(b[8+i])
	}
	var mh, ml uint64
	switch {
	case bits >= 64:
		mh = ^uint64(0)
		ml = ^uint64(0) << (128 - bits) // a shift by 64 gives 0 (a /64)
	case bits > 0:
		mh = ^uint64(0) << (64 - bits)
	}
	return prim{op: pNet6, dir: dir, a6: [2]uint64{hi & mh, lo & ml}, m6: [2]uint64{mh, ml}}
}

func isDigits(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}

// unknownWord explains a word that is not part of the language: a likely
// typo of a keyword, or an operand without its keyword.
func unknownWord(w string) string {
	msg := fmt.Sprintf("unknown word %q", w)
	low := strings.ToLower(w)
	if k, ok := wordAliases[low]; ok {
		return msg + fmt.Sprintf(", did you mean %q?", k)
	}
	// Suggest the nearest keywords (all of them on a tie: "prot" is one
	// edit from both "proto" and "port"), within two edits.
	var best []string
	bestD := 3
	for _, k := range keywords {
		d := editDistance(low, k)
		if d >= len(k) || d > bestD {
			continue
		}
		if d < bestD {
			best, bestD = best[:0], d
		}
		best = append(best, strconv.Quote(k))
	}
	switch {
	case len(best) > 0:
		return msg + ", did you mean " + strings.Join(best, " or ") + "?"
	case isDigits(w):
		return msg + ": a number needs \"port\" or \"proto\" before it"
	case strings.Contains(w, "/"):
		if _, err := netip.ParsePrefix(w); err == nil {
			return msg + ": a prefix needs \"net\" before it"
		}
	default:
		if _, err := netip.ParseAddr(w); err == nil {
			return msg + ": an address needs \"host\" before it"
		}
	}
	return msg
}

// wordAliases are other tools' words for a keyword (nftables' ip
// version names, Wireshark's display filters), suggested before the
// nearest spelling: "ipv4" is one edit from "ip6" but means "ip".
var wordAliases = map[string]string{
	"ipv4": "ip", "ip4": "ip", "ipv6": "ip6", "inet6": "ip6", "inet": "ip",
	"icmpv6": "icmp6", "icmpv4": "icmp", "ipv6-icmp": "icmp6",
	"sport": "src port", "dport": "dst port", "saddr": "src host", "daddr": "dst host",
	"src_port": "src port", "dst_port": "dst port",
}

// editDistance is the optimal string alignment distance (Levenshtein plus
// adjacent transpositions, so "tpc" is one edit from "tcp").
func editDistance(a, b string) int {
	return suggest.Distance(a, b, 1<<20)
}
