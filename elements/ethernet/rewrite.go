package ethernet

import (
	"github.com/junction-dataplane/junction/elements"
	"github.com/junction-dataplane/junction/packet"
)

// RewriteConfig is EtherRewrite's config.
type RewriteConfig struct {
	Src string `toml:"src"`
	Dst string `toml:"dst"`

	hdr [12]byte // dst then src, as they sit in the frame
}

// Validate parses both addresses.
func (c *RewriteConfig) Validate() error {
	for _, k := range []struct {
		key, val string
		at       int
	}{{"src", c.Src, 6}, {"dst", c.Dst, 0}} {
		if k.val == "" {
			return elements.Errorf(k.key, "required: a MAC address aa:bb:cc:dd:ee:ff")
		}
		m, ok := packet.ParseMAC(k.val)
		if !ok {
			return elements.Errorf(k.key, "bad MAC %q (want aa:bb:cc:dd:ee:ff)", k.val)
		}
		copy(c.hdr[k.at:k.at+6], m[:])
	}
	return nil
}

func init() {
	elements.Register(elements.Type{
		Name:      "EtherRewrite",
		NewConfig: func() any { return &RewriteConfig{} },
		New:       newRewrite,
		In:        1,
		Out:       1,
		Doc:       etherRewriteManual,
	})
}

// Rewrite is one worker's EtherRewrite.
type Rewrite struct {
	hdr       [12]byte
	out       *elements.Output
	st        *elements.Stats
	truncated elements.Reason
}

func newRewrite(cfg any, ctx *elements.Context) (elements.Element, error) {
	c := cfg.(*RewriteConfig)
	return &Rewrite{hdr: c.hdr, out: ctx.Outputs[0], st: ctx.Stats,
		truncated: ctx.Stats.Reason("truncated")}, nil
}

// Push rewrites the addresses of every frame and passes the batch on.
func (r *Rewrite) Push(in int, b *packet.Batch) {
	k := 0
	for _, p := range b.Pkts {
		if len(p.Data) < packet.EthernetLen {
			r.st.Drop(p, r.truncated)
			continue
		}
		// One 12-byte copy: dst and src are adjacent.
		copy(p.Data[:12], r.hdr[:])
		b.Pkts[k] = p
		k++
	}
	b.Truncate(k)
	r.out.Push(b)
}
