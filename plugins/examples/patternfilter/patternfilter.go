package patternfilter

import (
	"bytes"
	"encoding/binary"
	"encoding/hex"
	"strings"

	"github.com/junction-dataplane/junction/elements"
	"github.com/junction-dataplane/junction/packet"
)

// Config is PatternFilter's config (shared by the in-process element and
// the plugin).
type Config struct {
	// Patterns are matched anywhere in the payload; "hex:4142" gives bytes.
	Patterns []string `toml:"patterns"`
	// Scope is "payload" (after the IPv4 and TCP/UDP headers; the whole
	// frame after Ethernet for anything else) or "frame".
	Scope string `toml:"scope"`

	pats [][]byte
}

// NewConfig returns the defaults.
func NewConfig() any { return &Config{Scope: "payload"} }

// Validate compiles the patterns.
func (c *Config) Validate() error {
	if len(c.Patterns) == 0 {
		return elements.Errorf("patterns", "required: at least one pattern")
	}
	c.pats = c.pats[:0]
	for i, p := range c.Patterns {
		b := []byte(p)
		if h, ok := strings.CutPrefix(p, "hex:"); ok {
			var err error
			if b, err = hex.DecodeString(h); err != nil {
				return elements.Errorf("patterns", "item %d: bad hex %q: %v", i+1, h, err)
			}
		}
		if len(b) == 0 {
			return elements.Errorf("patterns", "item %d: empty pattern", i+1)
		}
		c.pats = append(c.pats, b)
	}
	switch c.Scope {
	case "payload", "frame":
	default:
		return elements.Errorf("scope", "%q: want \"payload\" or \"frame\"", c.Scope)
	}
	return nil
}

// Matcher is the filter's logic, independent of where it runs.
type Matcher struct {
	pats    [][]byte
	payload bool
}

// NewMatcher builds a matcher from a validated config.
func NewMatcher(c *Config) *Matcher {
	return &Matcher{pats: c.pats, payload: c.Scope == "payload"}
}

// Match reports whether frame contains a pattern in the configured scope.
// It never panics, whatever the frame.
func (m *Matcher) Match(frame []byte) bool {
	data := frame
	if m.payload {
		data = Payload(frame)
	}
	for _, p := range m.pats {
		if bytes.Contains(data, p) {
			return true
		}
	}
	return false
}

// Payload returns the L4 payload of an IPv4 TCP/UDP frame, the IP payload
// of other IPv4, and the frame after the Ethernet header otherwise.
func Payload(f []byte) []byte {
	if len(f) < 14 {
		return nil
	}
	if binary.BigEndian.Uint16(f[12:]) != 0x0800 || len(f) < 34 {
		return f[14:]
	}
	ip := f[14:]
	ihl := int(ip[0]&0x0f) * 4
	if ihl < 20 || ihl > len(ip) {
		return nil
	}
	l4 := ip[ihl:]
	switch ip[9] {
	case 17:
		if len(l4) < 8 {
			return nil
		}
		return l4[8:]
	case 6:
		if len(l4) < 20 {
			return nil
		}
		off := int(l4[12]>>4) * 4
		if off < 20 || off > len(l4) {
			return nil
		}
		return l4[off:]
	}
	return l4
}

// Doc is the element's manual page.
var Doc = elements.Doc{
	Synopsis: "PatternFilter(patterns, [scope])",
	Summary:  "sends packets whose payload contains one of the patterns to output 1, the rest to output 0",
	Ports:    "input 0: any packets; output 0: no pattern found; output 1: a pattern found.",
	Keys: []elements.Key{
		{Name: "patterns", Type: "[]string", Required: true, Variadic: true, Doc: `byte strings to find; "hex:0a0b" for raw bytes`},
		{Name: "scope", Type: "string", Default: "payload", Doc: `"payload" (after the IPv4 and TCP/UDP headers) or "frame"`},
	},
	Stats:   "none of its own (packets per output are in the graph's accounting).",
	Example: `"FromDevice(lan) -> f :: PatternFilter(attack, hex:deadbeef)", "f[0] -> ToDevice(wan)", "f[1] -> Discard"`,
	SeeAlso: "plugins/examples/patternfilter/README.md",
}

func init() {
	elements.Register(elements.Type{
		Name:      "PatternFilter",
		NewConfig: NewConfig,
		New:       newElement,
		In:        1,
		Out:       2,
		Doc:       Doc,
	})
}

// element is the in-process PatternFilter.
type element struct {
	m     *Matcher
	outs  []*elements.Output
	match *packet.Batch
}

func newElement(cfg any, ctx *elements.Context) (elements.Element, error) {
	return &element{m: NewMatcher(cfg.(*Config)), outs: ctx.Outputs,
		match: packet.NewBatch(max(ctx.Batch, packet.MaxBatch))}, nil
}

// Push splits the batch: matches to output 1, the rest (compacted in
// place) to output 0.
func (e *element) Push(_ int, b *packet.Batch) {
	k := 0
	for _, p := range b.Pkts {
		if e.m.Match(p.Data) {
			e.match.Add(p)
			continue
		}
		b.Pkts[k] = p
		k++
	}
	b.Pkts = b.Pkts[:k]
	e.outs[0].Push(b)
	e.outs[1].Push(e.match)
}
