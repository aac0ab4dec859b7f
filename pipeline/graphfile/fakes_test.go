package graphfile

import (
	"errors"
	"net/netip"
	"strings"
	"time"

	"github.com/junction-dataplane/junction/drivers"
	"github.com/junction-dataplane/junction/elements"
)

// Fake element types and a fake driver for the loader's tests. Their names
// start with "TestLd" ("testld" for the driver) so that they never collide
// with the real elements linked into the same test binary.

type ldDeviceConfig struct {
	Device string `toml:"device"`
	Burst  int    `toml:"burst"`
}

func (c *ldDeviceConfig) Validate() error {
	if c.Burst < 1 || c.Burst > 256 {
		return elements.Errorf("burst", "must be 1..256, got %d", c.Burst)
	}
	return nil
}

type ldFilterConfig struct {
	Mode   string  `toml:"mode"`
	Limit  int     `toml:"limit"`
	Strict bool    `toml:"strict"`
	Ratio  float64 `toml:"ratio"`
}

func (c *ldFilterConfig) Validate() error {
	switch c.Mode {
	case "all", "some", "none":
	default:
		return elements.Errorf("mode", "must be all, some or none, got %q", c.Mode)
	}
	if c.Limit < 0 {
		return elements.Errorf("limit", "must be ≥ 0, got %d", c.Limit)
	}
	return nil
}

type ldRulesConfig struct {
	Rules []string `toml:"rules"`
}

func (c *ldRulesConfig) Validate() error {
	if len(c.Rules) == 0 {
		return elements.Errorf("rules", "needs at least one rule")
	}
	for i, r := range c.Rules {
		if strings.TrimSpace(r) == "" {
			return elements.Errorf("rules", "rule %d is empty", i+1)
		}
	}
	return nil
}

func (c *ldRulesConfig) Ports() (int, int) { return 1, len(c.Rules) }

type ldRouteConfig struct {
	Out    int      `toml:"out"`
	Routes []string `toml:"routes"`
}

func (c *ldRouteConfig) Validate() error {
	if c.Out < 1 || c.Out > 8 {
		return elements.Errorf("out", "must be 1..8, got %d", c.Out)
	}
	for _, r := range c.Routes {
		if !strings.Contains(r, " out ") {
			return elements.Errorf("routes", "route %q has no \"out PORT\"", r)
		}
	}
	return nil
}

func (c *ldRouteConfig) Ports() (int, int) { return 1, c.Out }

type ldTeeConfig struct {
	N int `toml:"n"`
}

func (c *ldTeeConfig) Validate() error {
	if c.N < 1 {
		return elements.Errorf("n", "must be ≥ 1, got %d", c.N)
	}
	return nil
}

func (c *ldTeeConfig) Ports() (int, int) { return 1, c.N }

type ldTimeouts struct {
	TCP int `toml:"tcp"`
	UDP int `toml:"udp"`
}

type ldKindsConfig struct {
	S        string        `toml:"s"`
	I        int           `toml:"i"`
	I8       int8          `toml:"i8"`
	U        uint16        `toml:"u"`
	B        bool          `toml:"b"`
	F        float64       `toml:"f"`
	D        time.Duration `toml:"d"`
	A        netip.Addr    `toml:"a"`
	SS       []string      `toml:"ss"`
	Timeouts ldTimeouts    `toml:"timeouts"`
	II       []int         `toml:"ii"`
}

type ldPanicConfig struct {
	Boom bool `toml:"boom"`
}

func (c *ldPanicConfig) Validate() error {
	if c.Boom {
		panic("boom")
	}
	return nil
}

type ldDriverConfig struct {
	Interface string `toml:"interface"`
	Queues    int    `toml:"queues"`
}

func (c *ldDriverConfig) Validate() error {
	if c.Queues < 1 || c.Queues > 64 {
		return elements.Errorf("queues", "must be 1..64, got %d", c.Queues)
	}
	return nil
}

func fakeNew(any, *elements.Context) (elements.Element, error) {
	return nil, errors.New("fake element type: not for running")
}

func init() {
	devKey := elements.Key{Name: "device", Type: "device", Required: true, Doc: "the device"}
	elements.Register(elements.Type{
		Name: "TestLdSource", In: 0, Out: 1, Source: true, New: fakeNew,
		NewConfig: func() any { return &ldDeviceConfig{Burst: 32} },
		Doc:       elements.Doc{Synopsis: "TestLdSource(device)", Keys: []elements.Key{devKey, {Name: "burst", Type: "int", Default: "32"}}},
	})
	elements.Register(elements.Type{
		Name: "TestLdSink", In: 1, Out: 0, New: fakeNew,
		NewConfig: func() any { return &ldDeviceConfig{Burst: 32} },
		Doc:       elements.Doc{Synopsis: "TestLdSink(device)", Keys: []elements.Key{devKey, {Name: "burst", Type: "int", Default: "32"}}},
	})
	elements.Register(elements.Type{
		Name: "TestLdFilter", In: 1, Out: 2, Optional: []int{1}, New: fakeNew,
		NewConfig: func() any { return &ldFilterConfig{Mode: "all"} },
		Doc: elements.Doc{Synopsis: "TestLdFilter(mode, limit, strict, ratio)", Keys: []elements.Key{
			{Name: "mode", Type: "string", Default: "all"},
			{Name: "limit", Type: "int", Default: "0"},
			{Name: "strict", Type: "bool", Default: "false"},
			{Name: "ratio", Type: "float", Default: "0"},
		}},
	})
	elements.Register(elements.Type{
		Name: "TestLdRules", In: 1, Out: -1, New: fakeNew,
		NewConfig: func() any { return &ldRulesConfig{} },
		Doc: elements.Doc{Synopsis: "TestLdRules(RULE, ...)", Keys: []elements.Key{
			{Name: "rules", Type: "[]string", Required: true, Variadic: true},
		}},
	})
	elements.Register(elements.Type{
		Name: "TestLdRoute", In: 1, Out: -1, New: fakeNew,
		NewConfig: func() any { return &ldRouteConfig{Out: 2} },
		Doc: elements.Doc{Synopsis: "TestLdRoute(out, ROUTE, ...)", Keys: []elements.Key{
			{Name: "out", Type: "int", Default: "2"},
			{Name: "routes", Type: "[]string", Required: true, Variadic: true},
		}},
	})
	elements.Register(elements.Type{
		Name: "TestLdTee", In: 1, Out: -1, New: fakeNew,
		NewConfig: func() any { return &ldTeeConfig{N: 2} },
		Doc:       elements.Doc{Synopsis: "TestLdTee(n)", Keys: []elements.Key{{Name: "n", Type: "int", Default: "2"}}},
	})
	elements.Register(elements.Type{
		Name: "TestLdDiscard", In: 1, Out: 0, New: fakeNew,
		Doc: elements.Doc{Synopsis: "TestLdDiscard"},
	})
	elements.Register(elements.Type{
		Name: "TestLdJoin", In: 2, Out: 1, New: fakeNew,
		Doc: elements.Doc{Synopsis: "TestLdJoin"},
	})
	elements.Register(elements.Type{
		Name: "TestLdKinds", In: 1, Out: 1, New: fakeNew,
		NewConfig: func() any { return &ldKindsConfig{S: "def", II: []int{9}} },
		Doc: elements.Doc{Synopsis: "TestLdKinds(s, i, i8, u, b, f, d, a, ss, timeouts, ii...)", Keys: []elements.Key{
			{Name: "s", Type: "string"}, {Name: "i", Type: "int"}, {Name: "i8", Type: "int"},
			{Name: "u", Type: "int"}, {Name: "b", Type: "bool"}, {Name: "f", Type: "float"},
			{Name: "d", Type: "duration"}, {Name: "a", Type: "address"}, {Name: "ss", Type: "[]string"},
			{Name: "timeouts", Type: "table"}, {Name: "ii", Type: "[]int", Variadic: true},
		}},
	})
	elements.Register(elements.Type{
		Name: "TestLdPanic", In: 1, Out: 1, New: fakeNew,
		NewConfig: func() any { return &ldPanicConfig{} },
		Doc:       elements.Doc{Synopsis: "TestLdPanic(boom)", Keys: []elements.Key{{Name: "boom", Type: "bool"}}},
	})
	drivers.Register(drivers.Driver{
		Name:      "testld",
		NewConfig: func() any { return &ldDriverConfig{Queues: 1} },
		Open: func(any, drivers.OpenContext) (drivers.Device, error) {
			return nil, errors.New("fake driver: not for running")
		},
	})
}
