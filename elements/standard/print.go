package standard

import (
	"io"
	"os"
	"strconv"

	"github.com/junction-dataplane/junction/elements"
	"github.com/junction-dataplane/junction/packet"
)

// PrintConfig is Print's config.
type PrintConfig struct {
	Label     string `toml:"label"`
	MaxLength int    `toml:"maxlength"`
	Contents  bool   `toml:"contents"`
}

// Validate checks maxlength.
func (c *PrintConfig) Validate() error {
	if c.MaxLength < -1 {
		return elements.Errorf("maxlength", "%d: want -1 (whole frame), 0 (none) or a byte count", c.MaxLength)
	}
	return nil
}

func init() {
	elements.Register(elements.Type{
		Name:      "Print",
		NewConfig: func() any { return &PrintConfig{MaxLength: 24, Contents: true} },
		New:       newPrint,
		In:        1,
		Out:       1,
		Doc:       printManual,
	})
}

// Print is one worker's Print.
type Print struct {
	// W receives the lines (os.Stderr; tests may replace it).
	W        io.Writer
	prefix   []byte // "label: "
	max      int
	contents bool
	buf      []byte // reused for every batch
	out      *elements.Output
}

func newPrint(cfg any, ctx *elements.Context) (elements.Element, error) {
	c := cfg.(*PrintConfig)
	p := &Print{W: os.Stderr, max: c.MaxLength, contents: c.Contents && c.MaxLength != 0,
		out: ctx.Outputs[0], buf: make([]byte, 0, 4096)}
	if c.Label != "" {
		p.prefix = append([]byte(c.Label), ": "...)
	}
	return p, nil
}

const hexDigits = "0123456789abcdef"

// Push prints the batch and passes it on.
func (p *Print) Push(in int, b *packet.Batch) {
	buf := p.buf[:0]
	for _, pk := range b.Pkts {
		buf = append(buf, p.prefix...)
		// Right-align the length in 4 columns, as Click does.
		n := len(pk.Data)
		for w := 1000; w > 1 && n < w; w /= 10 {
			buf = append(buf, ' ')
		}
		buf = strconv.AppendInt(buf, int64(n), 10)
		if p.contents {
			buf = append(buf, " |"...)
			show := pk.Data
			if p.max >= 0 && len(show) > p.max {
				show = show[:p.max]
			}
			for i, c := range show {
				if i%4 == 0 {
					buf = append(buf, ' ')
				}
				buf = append(buf, hexDigits[c>>4], hexDigits[c&0xf])
			}
			if len(show) < n {
				buf = append(buf, " ..."...)
			}
		}
		buf = append(buf, '\n')
	}
	if len(buf) > 0 {
		p.W.Write(buf) // best effort: a debugging aid must not stop the packets
	}
	p.buf = buf // keep what it grew to
	p.out.Push(b)
}
