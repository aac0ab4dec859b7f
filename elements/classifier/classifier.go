package classifier

import (
	"errors"
	"fmt"
	"slices"

	"github.com/junction-dataplane/junction/elements"
	"github.com/junction-dataplane/junction/packet"
)

// Config is Classifier's config: one rule per output port.
type Config struct {
	Rules []string `toml:"rules"`

	// prog is compiled by Validate from the rules in from; New reuses it
	// (every worker shares the read-only program) unless Rules changed.
	prog *program
	from []string
}

var (
	_ elements.Validator   = (*Config)(nil)
	_ elements.PortCounter = (*Config)(nil)
)

// Ports is one input and one output per rule.
func (c *Config) Ports() (in, out int) { return 1, len(c.Rules) }

// Validate parses and compiles every rule, so that a bad rule stops the
// graph from loading and packets never meet rule text.
func (c *Config) Validate() error {
	pr, err := compileRules(c.Rules)
	if err != nil {
		return elements.Errorf("rules", "%w", err)
	}
	c.prog, c.from = pr, slices.Clone(c.Rules)
	return nil
}

// compileRules parses rules (rule i feeds output i) into a program. The
// error is a *ParseError for the first bad rule.
func compileRules(rules []string) (*program, error) {
	if len(rules) == 0 {
		return nil, errors.New("required: at least one rule (one per output port)")
	}
	if len(rules) > maxRules {
		return nil, fmt.Errorf("%d rules: at most %d per Classifier", len(rules), maxRules)
	}
	trees := make([]*node, len(rules))
	for i, r := range rules {
		n, err := parseRule(r)
		if err != nil {
			err.Rule, err.Text = i, r
			return nil, err
		}
		trees[i] = n
	}
	return compile(trees), nil
}

func init() {
	elements.Register(elements.Type{
		Name:      "Classifier",
		NewConfig: func() any { return &Config{} },
		New:       newClassifier,
		In:        1,
		Out:       -1,
		Doc:       classifierManual,
	})
}

const languageDoc = `Rules are compiled once, when the graph is loaded, into one decision graph
shared by every worker (as Click's Classifier does); a packet is tested
against the rules in order and the first that matches wins (rules after a
"-" never match). A test whose outcome earlier tests already decide (the
second "tcp" of "tcp and port 22", "tcp and port 80") is not repeated.

Grammar (words are case-insensitive; precedence not > and > or; two terms
side by side without and/or are an error):

  rule      = "-" | expr
  expr      = term { ("or" | "||") term }
  term      = factor { ("and" | "&&") factor }
  factor    = ("not" | "!") factor | "(" expr ")" | primitive
  primitive = "arp" [ "request" | "reply" ]
            | "ip" | "ip6" | "tcp" | "udp" | "icmp" | "icmp6"
            | "proto" ( NUMBER | "tcp" | "udp" | "icmp" | "icmp6" )
            | [ "src" | "dst" ] ( "host" ADDR | "net" PREFIX | "port" NUMBER )
            | "ct" ( "new" | "established" | "related" | "invalid" | "untracked" )
            | "vlan" [ NUMBER ]
            | ( "tcp" | "udp" ) ( src/dst/port primitive )
            | ( "ip" | "ip6" ) ( src/dst/host/net/proto primitive )

Primitives:
  -              any packet; only as a whole rule
  arp            EtherType 0x0806; "arp request"/"arp reply": ARP opcode 1/2
  ip, ip6        EtherType 0x0800 / 0x86DD
  tcp, udp       IP protocol 6 / 17, over IPv4 or IPv6
  icmp           ICMPv4 (IPv4 protocol 1) or ICMPv6 (IPv6 next header 58)
  icmp6          ICMPv6 only; "ip and icmp" is ICMPv4 only
  proto N        IPv4 protocol N (0-255), or IPv6 next header N: either the
                 fixed header's or the upper-layer protocol after the
                 extension headers; "proto tcp" is "tcp" (also udp, icmp, icmp6)
  src host A     the source address is A; "dst host A", and "host A" for
                 either side. An IPv4 address matches only IPv4 packets, an
                 IPv6 one (IPv4-mapped included) only IPv6 packets
  src net P      the source address is in prefix P (10.0.0.0/8, 2001:db8::/32);
                 "dst net P", "net P" for either side. Bits beyond the prefix
                 length are an error
  src port N     TCP or UDP source port N (0-65535); "dst port N", "port N"
                 for either side. "tcp and port 80" restricts it to TCP
  ct STATE       the connection-tracking state Conntrack annotated the packet
                 with: new (no reply seen yet), established, related (an
                 ICMP error about a tracked flow), invalid, or untracked (not
                 seen by a Conntrack); put the Classifier after Conntrack
  vlan N         the frame's outermost tag (EtherType 0x8100, 802.1Q, or
                 0x88a8, 802.1ad) carries VLAN id N (1-4094; 0, a priority
                 tag, and 4095, reserved, are errors); "vlan" alone: any
                 tagged frame. Put it before VLANDecap, on the trunk
  tcp dst port N tcpdump's qualified form: "tcp dst port 23" is "tcp and
                 dst port 23", "udp port 53" is "udp and port 53", "ip host A"
                 is "ip and host A", "ip6 proto 58" is "ip6 and proto 58"
  and && or || not !  ( )

What a rule sees:
  - The Ethernet header is at the start of the frame and the network header
    at the L3 annotation. A tagged frame's EtherType is its tag's (0x8100
    or 0x88a8): it matches "vlan" rules, "-" and "not ..." rules, no
    arp/ip/ip6 rule; VLANDecap takes the tag off, and a Classifier after it
    sees the frame inside (docs/vlan.md).
  - IPv4 fields need the 20-byte fixed header in the frame, IPv6 fields the
    40-byte one. IPv4 options are skipped by IHL. IPv6 extension headers
    hop-by-hop, routing, fragment, destination options and AH are walked
    (at most 8); after others (ESP, unknown) the upper-layer protocol is
    unknown: only "proto N" of the fixed header matches.
  - Ports are read only from a TCP or UDP header that lies within the frame
    and within the IP total length (IPv6 payload length), and never from a
    non-first fragment: those have no L4 header, so no port rule matches
    them (tcp and udp still do).
  - A primitive whose field the frame does not contain (truncated, not IP)
    is false; "not" of it is therefore true.
  - host and net look at IP addresses only, never at ARP's sender or target.

Errors name the rule (numbered from 0, like the outputs) and the column:
  rule 1 "tpc or udp": col 1: unknown word "tpc", did you mean "tcp"?`

// classifier is one worker's instance.
type classifier struct {
	prog     *program
	outs     []*elements.Output
	dispatch *elements.Dispatch // sends a mixed batch to its ports
	st       *elements.Stats
	noMatch  elements.Reason
}

func newClassifier(cfg any, ctx *elements.Context) (elements.Element, error) {
	c := cfg.(*Config)
	if c.prog == nil || !slices.Equal(c.from, c.Rules) {
		if err := c.Validate(); err != nil {
			return nil, err
		}
	}
	e := &classifier{prog: c.prog, outs: ctx.Outputs, st: ctx.Stats,
		noMatch: ctx.Stats.Reason("no match")}
	if len(e.outs) != c.prog.nports {
		return nil, elements.Errorf("rules", "%d rules but %d outputs", c.prog.nports, len(e.outs))
	}
	e.dispatch = elements.NewDispatch(ctx, e.noMatch) // port nports: no rule matched
	return e, nil
}

// Push classifies every packet, then either passes b on whole (every packet
// went to one port: no copy) or splits it into the per-port batches.
func (e *classifier) Push(in int, b *packet.Batch) {
	pkts := b.Pkts
	if len(pkts) == 0 {
		return
	}
	pr := e.prog
	first := -1
	mixed := false
	for _, p := range pkts {
		port := pr.classifyCt(p.Data, int(p.L3), p.Ct.State)
		p.Port = uint16(port)
		if first < 0 {
			first = port
		} else if port != first {
			mixed = true
		}
	}
	nports := pr.nports
	if !mixed {
		if first == nports {
			e.st.DropBatch(b, e.noMatch)
		} else {
			e.outs[first].Push(b)
		}
		return
	}
	e.dispatch.Split(b)
}
