package graphfile

import (
	"errors"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/junction-dataplane/junction/packet"
)

// parseSrc parses src as "t.toml" and splits the result.
func parseSrc(t *testing.T, src string) (*Graph, ErrorList) {
	t.Helper()
	g, err := Parse("t.toml", []byte(src))
	if err == nil {
		if g == nil {
			t.Fatal("Parse returned neither a graph nor an error")
		}
		return g, nil
	}
	if g != nil {
		t.Fatal("Parse returned a graph together with an error")
	}
	var list ErrorList
	if !errors.As(err, &list) {
		t.Fatalf("Parse error is %T, want ErrorList: %v", err, err)
	}
	if len(list) == 0 {
		t.Fatal("Parse returned an empty ErrorList")
	}
	return nil, list
}

func mustParse(t *testing.T, src string) *Graph {
	t.Helper()
	g, errs := parseSrc(t, src)
	if errs != nil {
		t.Fatalf("unexpected errors:\n%v", errs)
	}
	return g
}

const validGraph = `# a complete graph
[forwarder]
workers = 2
batch   = 32
stats   = "127.0.0.1:9100"

[devices.wan]
driver    = "testld"
interface = "veth-wan"
queues    = 2
addresses = ["192.0.2.1/24", "2001:db8::1/64"]
mac       = "02:00:00:00:00:02"

[devices.lan]
driver    = "testld"
interface = "veth-lan"
mac       = "02-00-00-00-00-01"

[elements.rt]
type   = "TestLdRoute"
out    = 2
routes = [
  "10.0.0.0/8 out 0",
  "0.0.0.0/0 out 1",
]

[elements.in]
type   = "TestLdSource"
device = "lan"

[graph]
links = [
  "in -> cls :: TestLdRules(arp, \"ip, not tcp\", (a, b)) -> f :: TestLdFilter(some, 5)[1] -> [1]j",
  "cls[1] -> TestLdFilter -> rt",
  "cls[2] -> [0]j :: TestLdJoin -> t :: TestLdTee(3) -> TestLdDiscard",
  "t[1] -> TestLdDiscard",
  "t [2]->TestLdDiscard",
  "f -> TestLdDiscard",
  "rt[0] -> TestLdSink(wan)",
  "rt[1] -> TestLdSink(lan)",
  "TestLdSource(wan) -> TestLdSink(lan)",
]
`

func TestParseValid(t *testing.T) {
	g := mustParse(t, validGraph)
	if g.File != "t.toml" || g.Workers != 2 || g.Batch != 32 || g.Stats != "127.0.0.1:9100" {
		t.Errorf("forwarder: file %q workers %d batch %d stats %q", g.File, g.Workers, g.Batch, g.Stats)
	}
	// Devices in declaration order, not name order.
	if len(g.Devices) != 2 || g.Devices[0].Name != "wan" || g.Devices[1].Name != "lan" {
		t.Fatalf("devices: %+v", g.Devices)
	}
	wan, lan := g.Devices[0], g.Devices[1]
	if wan.Index != 0 || lan.Index != 1 || wan.Pos.Line != 7 || lan.Pos.Line != 14 {
		t.Errorf("device index/pos: wan %d %v, lan %d %v", wan.Index, wan.Pos, lan.Index, lan.Pos)
	}
	if wan.Driver == nil || wan.Driver.Name != "testld" {
		t.Errorf("wan driver %v", wan.Driver)
	}
	if c, ok := wan.Config.(*ldDriverConfig); !ok || c.Interface != "veth-wan" || c.Queues != 2 {
		t.Errorf("wan config %#v", wan.Config)
	}
	if c := lan.Config.(*ldDriverConfig); c.Queues != 1 {
		t.Errorf("lan queues default: %d", c.Queues)
	}
	wantAddrs := []netip.Prefix{netip.MustParsePrefix("192.0.2.1/24"), netip.MustParsePrefix("2001:db8::1/64")}
	if len(wan.Addresses) != 2 || wan.Addresses[0] != wantAddrs[0] || wan.Addresses[1] != wantAddrs[1] {
		t.Errorf("wan addresses %v (host bits must be kept)", wan.Addresses)
	}
	if wan.MAC != (packet.MAC{2, 0, 0, 0, 0, 2}) || lan.MAC != (packet.MAC{2, 0, 0, 0, 0, 1}) {
		t.Errorf("MACs %v %v", wan.MAC, lan.MAC)
	}

	type el struct {
		name, typ string
		anon      bool
		in, out   int
		line      int
	}
	want := []el{
		{"rt", "TestLdRoute", false, 1, 2, 19},
		{"in", "TestLdSource", false, 0, 1, 27},
		{"cls", "TestLdRules", false, 1, 3, 33},
		{"f", "TestLdFilter", false, 1, 2, 33},
		{"TestLdFilter@1", "TestLdFilter", true, 1, 2, 34},
		{"j", "TestLdJoin", false, 2, 1, 35},
		{"t", "TestLdTee", false, 1, 3, 35},
		{"TestLdDiscard@1", "TestLdDiscard", true, 1, 0, 35},
		{"TestLdDiscard@2", "TestLdDiscard", true, 1, 0, 36},
		{"TestLdDiscard@3", "TestLdDiscard", true, 1, 0, 37},
		{"TestLdDiscard@4", "TestLdDiscard", true, 1, 0, 38},
		{"TestLdSink(wan)@1", "TestLdSink", true, 1, 0, 39},
		{"TestLdSink(lan)@2", "TestLdSink", true, 1, 0, 40},
		{"TestLdSource(wan)@1", "TestLdSource", true, 0, 1, 41},
		{"TestLdSink(lan)@3", "TestLdSink", true, 1, 0, 41},
	}
	if len(g.Elements) != len(want) {
		for _, e := range g.Elements {
			t.Logf("%s %s", e.Name, e.Type.Name)
		}
		t.Fatalf("%d elements, want %d", len(g.Elements), len(want))
	}
	for i, w := range want {
		e := g.Elements[i]
		if e.Name != w.name || e.Type.Name != w.typ || e.Anonymous != w.anon || e.In != w.in || e.Out != w.out || e.Pos.Line != w.line || e.Pos.File != "t.toml" {
			t.Errorf("element %d: got %s %s anon=%v %d→%d line %d, want %+v", i, e.Name, e.Type.Name, e.Anonymous, e.In, e.Out, e.Pos.Line, w)
		}
	}
	cls := g.Element("cls").Config.(*ldRulesConfig)
	if got := strings.Join(cls.Rules, "|"); got != `arp|ip, not tcp|(a, b)` {
		t.Errorf("cls rules %q", got)
	}
	if f := g.Element("f").Config.(*ldFilterConfig); f.Mode != "some" || f.Limit != 5 {
		t.Errorf("filter config %+v", f)
	}
	if f := g.Element("TestLdFilter@1").Config.(*ldFilterConfig); f.Mode != "all" {
		t.Errorf("filter defaults %+v", f)
	}
	if rt := g.Element("rt").Config.(*ldRouteConfig); len(rt.Routes) != 2 || rt.Routes[1] != "0.0.0.0/0 out 1" {
		t.Errorf("rt %+v", rt)
	}
	if g.Element("TestLdDiscard@1").Config != nil {
		t.Error("a type without NewConfig must have a nil Config")
	}

	wantLinks := []Link{
		{"in", 0, "cls", 0, Pos{"t.toml", 33}},
		{"cls", 0, "f", 0, Pos{"t.toml", 33}},
		{"f", 1, "j", 1, Pos{"t.toml", 33}},
		{"cls", 1, "TestLdFilter@1", 0, Pos{"t.toml", 34}},
		{"TestLdFilter@1", 0, "rt", 0, Pos{"t.toml", 34}},
		{"cls", 2, "j", 0, Pos{"t.toml", 35}},
		{"j", 0, "t", 0, Pos{"t.toml", 35}},
		{"t", 0, "TestLdDiscard@1", 0, Pos{"t.toml", 35}},
		{"t", 1, "TestLdDiscard@2", 0, Pos{"t.toml", 36}},
		{"t", 2, "TestLdDiscard@3", 0, Pos{"t.toml", 37}},
		{"f", 0, "TestLdDiscard@4", 0, Pos{"t.toml", 38}},
		{"rt", 0, "TestLdSink(wan)@1", 0, Pos{"t.toml", 39}},
		{"rt", 1, "TestLdSink(lan)@2", 0, Pos{"t.toml", 40}},
		{"TestLdSource(wan)@1", 0, "TestLdSink(lan)@3", 0, Pos{"t.toml", 41}},
	}
	if len(g.Links) != len(wantLinks) {
		t.Fatalf("links: %+v", g.Links)
	}
	for i, w := range wantLinks {
		if g.Links[i] != w {
			t.Errorf("link %d: %+v, want %+v", i, g.Links[i], w)
		}
	}
}

func TestParseDefaults(t *testing.T) {
	g := mustParse(t, `
[devices.d]
driver = "testld"
[graph]
links = ["TestLdSource(d) -> TestLdSink(d)"]
`)
	if g.Workers != 0 || g.Batch != packet.DefaultBatch || g.Stats != "" {
		t.Errorf("defaults: workers %d batch %d stats %q", g.Workers, g.Batch, g.Stats)
	}
	if d := g.Devices[0]; d.Addresses != nil || d.MAC != (packet.MAC{}) {
		t.Errorf("device defaults %+v", d)
	}
}

func TestLoad(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "g.toml")
	src := "[devices.d]\ndriver = \"testld\"\n[graph]\nlinks = [\"TestLdSource(d) -> TestLdSink(d)\"]\n"
	if err := os.WriteFile(path, []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	g, err := Load(path)
	if err != nil || g.File != path {
		t.Fatalf("Load: %v, %+v", err, g)
	}
	if _, err := Load(filepath.Join(dir, "missing.toml")); err == nil || !errors.Is(err, os.ErrNotExist) {
		t.Errorf("Load of a missing file: %v", err)
	}
	bad := filepath.Join(dir, "bad.toml")
	os.WriteFile(bad, []byte("[graph]\nlinks = []\n"), 0o644)
	if _, err := Load(bad); err == nil || !strings.HasPrefix(err.Error(), bad+":2: ") {
		t.Errorf("Load errors must name the path: %v", err)
	}
}

func TestInlineArgKinds(t *testing.T) {
	tests := []struct {
		args string
		want ldKindsConfig
		err  string
	}{
		{args: "", want: ldKindsConfig{S: "def", II: []int{9}}},
		{args: `hello, -7, -128, 65535, true, 2.5, 250ms, 10.0.0.1, x, y`, err: `argument 10: a table cannot be given as an inline argument`},
		{args: `hello, -7, -128, 65535, true, 2.5, 250ms, 10.0.0.1`,
			want: ldKindsConfig{S: "hello", I: -7, I8: -128, U: 65535, B: true, F: 2.5, D: 250 * time.Millisecond, A: netip.MustParseAddr("10.0.0.1"), II: []int{9}}},
		{args: `"a, b", 0x10, 1_000`, err: `key "i8": argument 3: 1000 out of range (-128..127)`},
		{args: `"a, b", 0x10`, want: ldKindsConfig{S: "a, b", I: 16, II: []int{9}}},
		{args: `"quote \" in", 1`, want: ldKindsConfig{S: `quote " in`, I: 1, II: []int{9}}},
		{args: `s, ten`, err: `key "i": argument 2: want integer, got "ten"`},
		{args: `s, 1, 1, -1`, err: `key "u": argument 4: want non-negative integer, got "-1"`},
		{args: `s, 1, 1, 65536`, err: `key "u": argument 4: 65536 out of range (0..65535)`},
		{args: `s, 1, 1, 1, yes`, err: `key "b": argument 5: want boolean, got "yes"`},
		{args: `s, 1, 1, 1, false, x`, err: `key "f": argument 6: want number, got "x"`},
		{args: `s, 1, 1, 1, false, 1, 5 parsecs`, err: `key "d": argument 7: bad duration "5 parsecs"`},
		{args: `s, 1, 1, 1, false, 1, 1s, 10.0.0.300`, err: `key "a": argument 8: bad value "10.0.0.300"`},
		{args: `s, 1, 1, 1, false, 1, 1s, ::1, one`, want: ldKindsConfig{S: "s", I: 1, I8: 1, U: 1, F: 1, D: time.Second, A: netip.MustParseAddr("::1"), SS: []string{"one"}, II: []int{9}}},
		{args: `"\q"`, err: `key "s": argument 1: bad quoted argument`},
		{args: `a, , b`, err: `argument 2 is empty`},
	}
	for _, tt := range tests {
		src := "[devices.d]\ndriver = \"testld\"\n[graph]\nlinks = [\n  \"TestLdSource(d) -> k :: TestLdKinds(" +
			strings.ReplaceAll(strings.ReplaceAll(tt.args, `\`, `\\`), `"`, `\"`) + ") -> TestLdSink(d)\",\n]\n"
		g, errs := parseSrc(t, src)
		if tt.err != "" {
			if len(errs) != 1 || !strings.Contains(errs[0].Error(), tt.err) || errs[0].Pos.Line != 5 {
				t.Errorf("args %q: errors %v, want one at line 5 containing %q", tt.args, errs, tt.err)
			}
			continue
		}
		if errs != nil {
			t.Errorf("args %q: %v", tt.args, errs)
			continue
		}
		got := g.Element("k").Config.(*ldKindsConfig)
		if got.S != tt.want.S || got.I != tt.want.I || got.I8 != tt.want.I8 || got.U != tt.want.U || got.B != tt.want.B ||
			got.F != tt.want.F || got.D != tt.want.D || got.A != tt.want.A || strings.Join(got.SS, ",") != strings.Join(tt.want.SS, ",") ||
			len(got.II) != len(tt.want.II) {
			t.Errorf("args %q: got %+v, want %+v", tt.args, *got, tt.want)
		}
	}
}

func TestVariadicArgs(t *testing.T) {
	// The variadic key takes every remaining argument and replaces the
	// default list; each is converted by the list's element kind.
	g := mustParse(t, `
[devices.d]
driver = "testld"
[elements.k]
type = "TestLdKinds"
ii = [1, 2]
[graph]
links = ["TestLdSource(d) -> k -> TestLdSink(d)", "TestLdSource(d) -> r :: TestLdRoute(3, a out 0, b out 1, c out 2) -> TestLdDiscard", "r[1] -> TestLdDiscard", "r[2] -> TestLdDiscard"]
`)
	k := g.Element("k").Config.(*ldKindsConfig)
	if len(k.II) != 2 || k.II[0] != 1 || k.II[1] != 2 {
		t.Errorf("table list %v", k.II)
	}
	r := g.Element("r").Config.(*ldRouteConfig)
	if r.Out != 3 || strings.Join(r.Routes, "|") != "a out 0|b out 1|c out 2" || g.Element("r").Out != 3 {
		t.Errorf("variadic routes %+v", r)
	}
}

// TestKeywordArgs: after the positional arguments, KEY = VALUE sets a key
// by name (spaces around "=" optional); a list key takes [A, B] or one
// item; an argument NAME=VALUE whose NAME is no key stays positional (a
// variadic item); a key given twice, a positional argument after a
// keyword one and a bad value are errors at the link's line.
func TestKeywordArgs(t *testing.T) {
	g := mustParse(t, `
[devices.d]
driver = "testld"
[graph]
links = [
  "TestLdSource(d) -> k :: TestLdKinds(x, b = true, ss = [p, \"q, r\"], d=2s) -> TestLdSink(d)",
  "TestLdSource(d) -> f :: TestLdFilter(strict = true) -> TestLdSink(d)",
  "TestLdSource(d) -> r :: TestLdRoute(3, udp=20s out 0, a out 1) -> TestLdDiscard",
  "r[1] -> TestLdDiscard", "r[2] -> TestLdDiscard",
  "TestLdSource(d) -> one :: TestLdKinds(ss = p, ii = [7, 8]) -> TestLdSink(d)",
]
`)
	k := g.Element("k").Config.(*ldKindsConfig)
	if k.S != "x" || !k.B || strings.Join(k.SS, "|") != "p|q, r" || k.D != 2*time.Second || k.I != 0 {
		t.Errorf("k: %+v", *k)
	}
	if f := g.Element("f").Config.(*ldFilterConfig); !f.Strict || f.Mode != "all" {
		t.Errorf("f: %+v (the others keep their defaults)", *f)
	}
	if r := g.Element("r").Config.(*ldRouteConfig); r.Out != 3 || strings.Join(r.Routes, "|") != "udp=20s out 0|a out 1" {
		t.Errorf("r: %+v: udp is no key, so udp=20s out 0 is a route", *r)
	}
	if o := g.Element("one").Config.(*ldKindsConfig); strings.Join(o.SS, "|") != "p" || len(o.II) != 2 || o.II[1] != 8 {
		t.Errorf("one: %+v", *o)
	}

	for _, tt := range []struct{ link, want string }{
		{"TestLdFilter(all, mode = some)", `key "mode" given twice`},
		{"TestLdFilter(strict = true, 5)", `argument 2: "5" after keyword arguments`},
		{"TestLdFilter(limit = lots)", `key "limit": argument 1: want integer, got "lots"`},
		{"TestLdKinds(ss = [p, ])", "argument 2 is empty"},
	} {
		_, errs := parseSrc(t, `[devices.d]
driver = "testld"
[graph]
links = ["TestLdSource(d) -> `+tt.link+` -> TestLdSink(d)"]
`)
		if !strings.Contains(errs.Error(), ":4: ") || !strings.Contains(errs.Error(), tt.want) {
			t.Errorf("%s: got\n%v\nwant an error at line 4 with %q", tt.link, errs, tt.want)
		}
	}
}

func TestTableValues(t *testing.T) {
	g := mustParse(t, `
[devices.d]
driver = "testld"
[elements.k]
type = "TestLdKinds"
s = "x"
i = -3
u = 7
b = true
f = 3          # an integer is a fine float
d = "1m30s"
a = "fe80::1"
ss = ["p", "q"]
timeouts = { tcp = 300, udp = 30 }
ii = [4, 5, 6]
[graph]
links = ["TestLdSource(d) -> k -> TestLdSink(d)"]
`)
	k := g.Element("k").Config.(*ldKindsConfig)
	if k.S != "x" || k.I != -3 || k.U != 7 || !k.B || k.F != 3 || k.D != 90*time.Second || k.A != netip.MustParseAddr("fe80::1") ||
		len(k.SS) != 2 || k.Timeouts != (ldTimeouts{300, 30}) || len(k.II) != 3 || k.II[2] != 6 {
		t.Errorf("decoded %+v", *k)
	}
}
