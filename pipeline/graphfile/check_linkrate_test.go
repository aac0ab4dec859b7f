package graphfile

import (
	"strings"
	"testing"

	"github.com/junction-dataplane/junction/drivers"
	"github.com/junction-dataplane/junction/elements"
)

// A fake driver on a kernel interface and a fake rate limiter.
type lrDriverConfig struct {
	Interface string `toml:"interface"`
}

func (c *lrDriverConfig) LinkInterface() string { return c.Interface }

type lrLimitConfig struct {
	Rate uint64 `toml:"rate"`
	Peak uint64 `toml:"peak"`
}

func (c *lrLimitConfig) Rates() []elements.RateKey {
	r := []elements.RateKey{{Key: "rate", BitsPerSecond: c.Rate}}
	if c.Peak != 0 {
		r = append(r, elements.RateKey{Key: "peak", BitsPerSecond: c.Peak})
	}
	return r
}

func init() {
	drivers.Register(drivers.Driver{
		Name:      "testlr",
		NewConfig: func() any { return &lrDriverConfig{} },
		Open: func(any, drivers.OpenContext) (drivers.Device, error) {
			return nil, nil
		},
	})
	elements.Register(elements.Type{
		Name: "TestLrLimit", In: 1, Out: 1, New: fakeNew,
		NewConfig: func() any { return &lrLimitConfig{} },
		Doc: elements.Doc{Synopsis: "TestLrLimit(rate, peak)", Keys: []elements.Key{
			{Name: "rate", Type: "int", Required: true}, {Name: "peak", Type: "int", Default: "0"}}},
	})
}

// TestLinkRateWarnings: a rate limit beyond the summed link speeds of the
// devices whose packets reach it is a warning located at the element,
// naming the key, the rate and the ceiling; within it, or with a device
// of unknown speed upstream, nothing is said. Devices: a (10 Gbit/s, as
// a veth reports), b (1 Gbit/s), u (no speed reported).
func TestLinkRateWarnings(t *testing.T) {
	speeds := map[string]uint64{"veth-a": 10e9, "eth-b": 1e9}
	old := linkSpeed
	linkSpeed = func(ifname string) (uint64, bool) { s, ok := speeds[ifname]; return s, ok }
	defer func() { linkSpeed = old }()
	devs := `
[devices.a]
driver = "testlr"
interface = "veth-a"
[devices.b]
driver = "testlr"
interface = "eth-b"
[devices.u]
driver = "testlr"
interface = "virtio-u"
`
	for _, c := range []struct {
		name  string
		links string
		want  []string // substrings, one warning each
	}{
		{"within one link", `"TestLdSource(a) -> TestLrLimit(9000000000) -> TestLdSink(a)"`, nil},
		{"beyond one link", `"TestLdSource(b) -> lim :: TestLrLimit(2000000000) -> TestLdSink(a)"`,
			[]string{`element "lim" (TestLrLimit): rate 2Gbit/s is beyond the link speed of the devices its packets come in by (b (eth-b) 1Gbit/s, 1Gbit/s in all)`}},
		{"the peak beyond", `"TestLdSource(b) -> lim :: TestLrLimit(500000000, 1500000000) -> TestLdSink(a)"`,
			[]string{`"lim" (TestLrLimit): peak 1.5Gbit/s is beyond`}},
		{"two links feed it: their sum", `"TestLdSource(a) -> lim :: TestLrLimit(10500000000)", "TestLdSource(b) -> lim", "lim -> TestLdSink(a)"`, nil},
		{"two links, beyond their sum", `"TestLdSource(a) -> lim :: TestLrLimit(12000000000)", "TestLdSource(b) -> lim", "lim -> TestLdSink(a)"`,
			[]string{`rate 12Gbit/s is beyond the link speed of the devices its packets come in by (a (veth-a) 10Gbit/s, b (eth-b) 1Gbit/s, 11Gbit/s in all)`}},
		{"a device of unknown speed upstream", `"TestLdSource(u) -> lim :: TestLrLimit(12000000000)", "TestLdSource(b) -> lim", "lim -> TestLdSink(a)"`, nil},
		{"the egress link does not count", `"TestLdSource(a) -> lim :: TestLrLimit(2000000000) -> TestLdSink(b)"`, nil},
	} {
		links := c.links
		for _, d := range []string{"a", "b", "u"} {
			if !strings.Contains(links, "("+d+")") {
				links += `, "TestLdSource(` + d + `) -> TestLdSink(` + d + `)"` // every device used
			}
		}
		g := mustParse(t, devs+"[graph]\nlinks = ["+links+"]\n")
		ws := LinkRateWarnings(g)
		if len(ws) != len(c.want) {
			t.Errorf("%s: warnings %v, want %d", c.name, ws, len(c.want))
			continue
		}
		for i, w := range c.want {
			if !strings.Contains(ws[i].String(), w) {
				t.Errorf("%s: warning %q, want it to contain %q", c.name, ws[i], w)
			}
		}
	}
}
