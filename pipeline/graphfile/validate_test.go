package graphfile

import (
	"strings"
	"testing"
)

// dev declares one device "d" used by the usual source and sink.
const dev = "[devices.d]\ndriver = \"testld\"\n"

// ok is a link that makes a graph with device d valid.
const okLink = `"TestLdSource(d) -> TestLdSink(d)"`

func TestValidationErrors(t *testing.T) {
	tests := []struct {
		name string
		src  string
		want []string // each ":LINE: substring", in order; nothing else
	}{
		{"unknown type", dev + `
[elements.f]
type = "TestLdFiltr"
[graph]
links = ["TestLdSource(d) -> f -> TestLdSink(d)"]`,
			[]string{`:5: element "f": key "type": unknown element type "TestLdFiltr", did you mean "TestLdFilter"?`}},
		{"unknown key", dev + `
[elements.f]
type = "TestLdFilter"
mdoe = "some"
[graph]
links = ["TestLdSource(d) -> f -> TestLdSink(d)"]`,
			[]string{`:6: element "f" (TestLdFilter): key "mdoe": unknown, did you mean "mode"?`}},
		{"unknown key, type without keys", dev + `
[elements.x]
type = "TestLdDiscard"
mode = 1
[graph]
links = ["TestLdSource(d) -> TestLdSink(d)", "TestLdSource(d) -> x"]`,
			[]string{`:6: element "x" (TestLdDiscard): key "mode": unknown (TestLdDiscard has no keys)`}},
		{"wrong value type", dev + `
[elements.f]
type = "TestLdFilter"
limit = "ten"
strict = 1
[graph]
links = ["TestLdSource(d) -> f -> TestLdSink(d)"]`,
			[]string{`:6: element "f" (TestLdFilter): key "limit": want integer, got string "ten"`,
				`:7: element "f" (TestLdFilter): key "strict": want boolean, got integer 1`}},
		{"wrong item type", dev + `
[elements.k]
type = "TestLdKinds"
ss = ["a", 1]
timeouts = { tcp = 1, tpc = 2 }
u = -1
[graph]
links = ["TestLdSource(d) -> k -> TestLdSink(d)"]`,
			[]string{`:6: element "k" (TestLdKinds): key "ss": item 2: want string, got integer 1`,
				`:7: element "k" (TestLdKinds): key "timeouts": unknown key "tpc", did you mean "tcp"?`,
				`:8: element "k" (TestLdKinds): key "u": -1 out of range (0..65535)`}},
		{"missing required key", dev + `
[elements.rt]
type = "TestLdRoute"
[graph]
links = ["TestLdSource(d) -> rt -> TestLdSink(d)", "rt[1] -> TestLdDiscard"]`,
			[]string{`:4: element "rt" (TestLdRoute): key "routes": required`}},
		{"missing required inline", dev + `
[graph]
links = ["TestLdSource(d) -> TestLdSink"]`,
			[]string{`:5: element "TestLdSink@1" (TestLdSink): key "device": required`}},
		{"validate names its key", dev + `
[elements.f]
type = "TestLdFilter"
limit = 3
mode = "most"
[graph]
links = ["TestLdSource(d) -> f -> TestLdSink(d)"]`,
			[]string{`:7: element "f" (TestLdFilter): key "mode": must be all, some or none, got "most"`}},
		{"validate of a default key uses the table line", dev + `
[elements.t]
type = "TestLdSource"
device = "d"
burst = 0
[graph]
links = ["t -> TestLdSink(d)"]`,
			[]string{`:7: element "t" (TestLdSource): key "burst": must be 1..256, got 0`}},
		{"validate inline", dev + `
[graph]
links = [
  "TestLdSource(d) -> TestLdFilter(most) -> TestLdSink(d)",
]`,
			[]string{`:6: element "TestLdFilter@1" (TestLdFilter): key "mode": must be all, some or none`}},
		{"missing type", dev + `
[elements.f]
mode = "all"
[graph]
links = ["TestLdSource(d) -> f -> TestLdSink(d)"]`,
			[]string{`:4: element "f": key "type": required`}},
		{"misspelt type key", dev + `
[elements.f]
typ = "TestLdFilter"
[graph]
links = ["TestLdSource(d) -> f -> TestLdSink(d)"]`,
			[]string{`:5: element "f": key "typ": unknown, did you mean "type"?`}},
		{"type not a string", dev + `
[elements.f]
type = 3
[graph]
links = ["TestLdSource(d) -> f -> TestLdSink(d)"]`,
			[]string{`:5: element "f": key "type": want string, got integer 3`}},
		{"element not a table", dev + `
[elements]
f = "TestLdFilter"
[graph]
links = ["TestLdSource(d) -> f -> TestLdSink(d)"]`,
			[]string{`:5: element "f": want a table [elements.f], got string "TestLdFilter"`}},
		{"bad element name", dev + `
[elements."a b"]
type = "TestLdDiscard"
[graph]
links = [` + okLink + `]`,
			[]string{`:4: element "a b": bad element name`}},
		{"dangling name", dev + `
[elements.src]
type = "TestLdSource"
device = "d"
[graph]
links = ["sorce -> TestLdSink(d)", "src -> TestLdSink(d)"]`,
			[]string{`:8: unknown element or type "sorce", did you mean "src"?`}},
		{"dangling type", dev + `
[graph]
links = ["TestLdSource(d) -> TestLdFiltr(some) -> TestLdSink(d)"]`,
			[]string{`:5: unknown element type "TestLdFiltr", did you mean "TestLdFilter"?`}},
		{"dangling inline declaration type", dev + `
[graph]
links = ["TestLdSource(d) -> f :: TestLdFiltr -> TestLdSink(d)"]`,
			[]string{`:5: element "f": unknown element type "TestLdFiltr", did you mean "TestLdFilter"?`}},
		{"case of a type", dev + `
[graph]
links = ["TestLdSource(d) -> testldsink(d)"]`,
			[]string{`:5: unknown element type "testldsink", did you mean "TestLdSink"?`}},
		{"arguments after an element name", dev + `
[elements.f]
type = "TestLdFilter"
[graph]
links = ["TestLdSource(d) -> f(some) -> TestLdSink(d)", "TestLdSource(d) -> f"]`,
			[]string{`:7: "f" is an element, not a type`}},
		{"duplicate declared and inline", dev + `
[elements.f]
type = "TestLdFilter"
[graph]
links = [
  "TestLdSource(d) -> f -> TestLdSink(d)",
  "TestLdSource(d) -> f :: TestLdFilter -> TestLdSink(d)",
]`,
			[]string{`:9: element "f": declared twice: in [elements] at line 4 and here`}},
		{"duplicate inline", dev + `
[graph]
links = [
  "TestLdSource(d) -> f :: TestLdFilter -> TestLdSink(d)",
  "TestLdSource(d) -> f :: TestLdFilter -> TestLdSink(d)",
]`,
			[]string{`:7: element "f": declared twice: first at line 6`}},
		{"output port out of range", dev + `
[graph]
links = [
  "TestLdSource(d) -> f :: TestLdFilter -> TestLdSink(d)",
  "f[2] -> TestLdSink(d)",
]`,
			[]string{`:7: element "f" (TestLdFilter): output [2] out of range: it has 2 outputs`}},
		{"input port out of range", dev + `
[graph]
links = [
  "TestLdSource(d) -> [1]TestLdSink(d)",
]`,
			[]string{`:6: element "TestLdSink(d)@1" (TestLdSink): input [1] out of range: it has 1 input`}},
		{"config decides the ports", dev + `
[graph]
links = [
  "TestLdSource(d) -> r :: TestLdRules(a, b) -> TestLdSink(d)",
  "r[1] -> TestLdSink(d)",
  "r[2] -> TestLdSink(d)",
]`,
			[]string{`:8: element "r" (TestLdRules): output [2] out of range: it has 2 outputs`}},
		{"no outputs", dev + `
[graph]
links = [
  "TestLdSource(d) -> x :: TestLdDiscard -> TestLdSink(d)",
]`,
			[]string{`:6: element "x" (TestLdDiscard): has no outputs: it cannot link to "TestLdSink(d)@1"`}},
		{"no inputs", dev + `
[graph]
links = [
  "TestLdSource(d) -> TestLdSource(d)",
  ` + okLink + `,
]`,
			[]string{`:6: element "TestLdSource(d)@2" (TestLdSource): has no inputs: "TestLdSource(d)@1" cannot link to it`}},
		{"output connected twice", dev + `
[graph]
links = [
  "s :: TestLdSource(d) -> TestLdSink(d)",
  "s -> TestLdSink(d)",
]`,
			[]string{`:7: element "s" (TestLdSource): output [0] is connected twice (first at line 6)`}},
		{"fan-in is fine, unconnected output is not", dev + `
[graph]
links = [
  "s :: TestLdSource(d) -> rt :: TestLdRoute(3, a out 0) -> k :: TestLdSink(d)",
  "TestLdSource(d) -> k",
]`,
			[]string{`:6: element "rt" (TestLdRoute): outputs [1], [2] are not connected`}},
		{"optional output may stay open", dev + `
[graph]
links = ["TestLdSource(d) -> TestLdFilter -> TestLdSink(d)"]`, nil},
		{"no input connected", dev + `
[graph]
links = ["TestLdSource(d) -> TestLdSink(d)", "j :: TestLdJoin -> TestLdDiscard"]`,
			[]string{`:5: element "j" (TestLdJoin): no input is connected`}},
		{"declared but unused", dev + `
[elements.f]
type = "TestLdFilter"
[graph]
links = [` + okLink + `]`,
			[]string{`:4: element "f" (TestLdFilter): declared but not used in [graph] links`}},
		{"cycle", dev + `
[graph]
links = [
  "TestLdSource(d) -> a :: TestLdJoin -> b :: TestLdFilter -> TestLdSink(d)",
  "b[1] -> [1]a",
]`,
			[]string{`:6: cycle: a -> b -> a`}},
		{"self loop", dev + `
[graph]
links = [
  "TestLdSource(d) -> a :: TestLdJoin -> t :: TestLdTee -> TestLdSink(d)",
  "t[1] -> [1]t",
]`,
			[]string{`:7: element "t" (TestLdTee): input [1] out of range: it has 1 input`, `:7: cycle: t -> t`}},
		{"self loop proper", dev + `
[graph]
links = [
  "TestLdSource(d) -> [0]a :: TestLdJoin -> [1]a",
]`,
			[]string{`:6: cycle: a -> a`}},
		{"two cycles", dev + `
[graph]
links = [
  "TestLdSource(d) -> a :: TestLdJoin -> b :: TestLdTee -> TestLdSink(d)",
  "b[1] -> [1]a",
  "TestLdSource(d) -> c :: TestLdJoin -> e :: TestLdTee(3) -> f :: TestLdFilter -> TestLdSink(d)",
  "e[1] -> TestLdSink(d)",
  "e[2] -> [1]c",
]`,
			[]string{`:6: cycle: a -> b -> a`, `:8: cycle: c -> e -> c`}},
		{"device key names no device", dev + `
[graph]
links = ["TestLdSource(d) -> TestLdSink(dd)", "TestLdSource(d) -> TestLdSink(d)"]`,
			[]string{`:5: element "TestLdSink(dd)@1" (TestLdSink): key "device": no device "dd" (devices: d), did you mean "d"?`}},
		{"device key in a table", dev + `
[elements.out]
type = "TestLdSink"
device = "lan"
[graph]
links = ["TestLdSource(d) -> out"]`,
			[]string{`:6: element "out" (TestLdSink): key "device": no device "lan" (devices: d)`}},
		{"no devices at all", `
[graph]
links = ["TestLdSource(lan) -> TestLdSink(lan)"]`,
			[]string{`:3: element "TestLdSource(lan)@1" (TestLdSource): key "device": no device "lan" (no devices are declared)`,
				`:3: element "TestLdSink(lan)@1" (TestLdSink): key "device": no device "lan" (no devices are declared)`}},
		{"unused device", dev + `
[devices.spare]
driver = "testld"
[graph]
links = [` + okLink + `]`,
			[]string{`:4: device "spare" (testld): not used by any element`}},
		{"empty links", dev + `
[graph]
links = []`,
			[]string{`:5: key "graph.links": empty: a graph needs at least one link`}},
		{"missing links", dev + `
[graph]
`,
			[]string{`:4: key "graph.links": required`}},
		{"missing graph", dev,
			[]string{`:1: no [graph] table`}},
		{"unknown graph key", dev + `
[graph]
link = [` + okLink + `]`,
			[]string{`:5: key "graph.link": unknown (the only key of [graph] is links), did you mean "links"?`}},
		{"links not strings", dev + `
[graph]
links = [
  ` + okLink + `,
  42,
]`,
			[]string{`:7: key "graph.links": item 2: want a link string, got integer 42`}},
		{"no source", dev + `
[graph]
links = ["TestLdFilter -> TestLdSink(d)"]`,
			[]string{`:5: key "graph.links": no source element: nothing brings packets into the graph (source types: TestLdSource`}},
		{"unknown table", dev + `
[elemnts.f]
type = "TestLdFilter"
[graph]
links = [` + okLink + `]`,
			[]string{`:4: unknown table [elemnts] (tables are [forwarder], [devices], [tables], [compounds], [elements], [graph]), did you mean "elements"?`}},
		{"stray top-level key", `workers = 2
` + dev + `
[graph]
links = [` + okLink + `]`,
			[]string{`:1: key "workers": unknown top-level key (it belongs under [forwarder])`}},
		{"table is not a table", `graph = "x"
` + dev,
			[]string{`:1: key "graph": want a table [graph], got string "x"`}},
		{"bad driver", `
[devices.d]
driver = "testl"
[graph]
links = [` + okLink + `]`,
			[]string{`:3: device "d": key "driver": unknown driver "testl" (drivers: …testld… did you mean "testld"?`}},
		{"missing driver", `
[devices.d]
interface = "eth0"
[graph]
links = [` + okLink + `]`,
			[]string{`:2: device "d": key "driver": required (one of: `}},
		{"device keys", `
[devices.d]
driver = "testld"
interfce = "eth0"
queues = "two"
addresses = ["10.0.0.1/24", "10.0.0.300/24", "10.0.0.1"]
mac = "02:00:00:00:00"
[graph]
links = [` + okLink + `]`,
			[]string{`:4: device "d" (testld): key "interfce": unknown (keys: driver, addresses, mac, interface, queues), did you mean "interface"?`,
				`:5: device "d" (testld): key "queues": want integer, got string "two"`,
				`:6: device "d" (testld): key "addresses": bad address "10.0.0.300/24": want ADDRESS/LENGTH`,
				`:6: device "d" (testld): key "addresses": bad address "10.0.0.1": want ADDRESS/LENGTH`,
				`:7: device "d" (testld): key "mac": bad MAC "02:00:00:00:00": want aa:bb:cc:dd:ee:ff`}},
		{"driver validate", `
[devices.d]
driver = "testld"
queues = 0
[graph]
links = [` + okLink + `]`,
			[]string{`:4: device "d" (testld): key "queues": must be 1..64, got 0`}},
		{"forwarder", `
[forwarder]
workers = -1
batch = 0
stats = 9100
wrokers = 2
` + dev + `
[graph]
links = [` + okLink + `]`,
			[]string{`:3: key "forwarder.workers": must be 0..1024`,
				`:4: key "forwarder.batch": must be 1..256, got 0`,
				`:5: key "forwarder.stats": want string, got integer 9100`,
				`:6: key "forwarder.wrokers": unknown (keys: workers, batch, stats), did you mean "forwarder.workers"?`}},
		{"batch too large", "[forwarder]\nbatch = 1000\n" + dev + "[graph]\nlinks = [" + okLink + "]",
			[]string{`:2: key "forwarder.batch": must be 1..256, got 1000`}},
		{"toml syntax", dev + `
[graph]
links = ["a -> b"
`,
			[]string{`:5: TOML syntax: `}},
		{"toml duplicate key", dev + `driver = "testld"
[graph]
links = [` + okLink + `]`,
			[]string{`:3: TOML syntax: `}},
		{"too many inline args", dev + `
[graph]
links = ["TestLdSource(d) -> TestLdFilter(all, 1, true, 0.5, extra) -> TestLdSink(d)"]`,
			[]string{`:5: element "TestLdFilter@1" (TestLdFilter): too many arguments: TestLdFilter takes at most 4 (mode, limit, strict, ratio), got 5`}},
		{"args for a type without keys", dev + `
[graph]
links = ["TestLdSource(d) -> TestLdSink(d)", "TestLdSource(d) -> TestLdDiscard(x)"]`,
			[]string{`:5: element "TestLdDiscard@1" (TestLdDiscard): too many arguments: TestLdDiscard takes none, got 1`}},
		{"link syntax", dev + `
[graph]
links = [
  "TestLdSource(d) -> ",
  "TestLdSource(d) -> TestLdSink(d",
  "TestLdSource(d) [x] -> TestLdSink(d)",
  "TestLdSource(d) => TestLdSink(d)",
  "[0]TestLdSource(d) -> TestLdSink(d)",
  "TestLdSource(d) -> TestLdSink(d)[0]",
  "TestLdSink(d)",
]`,
			[]string{`:6: link "TestLdSource(d) -> ": expected an element name or type at end of link`,
				`:7: link "TestLdSource(d) -> TestLdSink(d": unbalanced parentheses at column 30`,
				`:8: link "TestLdSource(d) [x] -> TestLdSink(d)": "TestLdSource(d)@1" has numbered ports: write [N] ([x] names a port of a compound element only)`,
				`:9: link "TestLdSource(d) => TestLdSink(d)": expected "->" at column 17`,
				`:10: link "[0]TestLdSource(d) -> TestLdSink(d)": input port [0] before the first element "TestLdSource"`,
				`:11: link "TestLdSource(d) -> TestLdSink(d)[0]": output port [0] after the last element "TestLdSink"`,
				`:12: link "TestLdSink(d)": a link needs "->"`}},
		{"panic in Validate", dev + `
[graph]
links = ["TestLdSource(d) -> TestLdPanic(true) -> TestLdSink(d)"]`,
			[]string{`:5: element "TestLdPanic@1" (TestLdPanic): internal error: TestLdPanic Validate panicked: boom`}},
		{"errors in file order, no cascades", `
[forwarder]
batch = 0
[devices.d]
driver = "testld"
[elements.f]
type = "TestLdFiltr"
[elements.g]
type = "TestLdFilter"
limit = -1
[graph]
links = [
  "TestLdSource(d) -> f -> TestLdSink(d)",
  "TestLdSource(d) -> g -> Dscard",
  "TestLdSource(d) -> TestLdSink(d)",
]`,
			[]string{`:3: key "forwarder.batch"`,
				`:7: element "f": key "type": unknown element type "TestLdFiltr", did you mean "TestLdFilter"?`,
				`:10: element "g" (TestLdFilter): key "limit": must be ≥ 0, got -1`,
				`:14: unknown element or type "Dscard"`}},
		{"inline declaration used before it is declared", dev + `
[graph]
links = [
  "TestLdSource(d) -> [1]j",
  "TestLdSource(d) -> j :: TestLdJoin -> TestLdSink(d)",
]`, nil},
		{"declaration-only link", dev + `
[graph]
links = [
  "j :: TestLdJoin",
  "TestLdSource(d) -> [1]j",
  "TestLdSource(d) -> j -> TestLdSink(d)",
]`, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, errs := parseSrc(t, tt.src)
			checkErrors(t, errs, tt.want)
		})
	}
}

// checkErrors checks that errs are exactly the wanted ones, in order; each
// want is a substring (normally ":LINE: ...") of the error after "t.toml".
func checkErrors(t *testing.T, errs ErrorList, want []string) {
	t.Helper()
	ok := len(errs) == len(want)
	for i := 0; ok && i < len(want); i++ {
		ok = containsAll(errs[i].Error(), want[i])
	}
	if !ok {
		var got []string
		for _, e := range errs {
			got = append(got, "  "+e.Error())
		}
		t.Errorf("errors:\n%s\nwant:\n  %s", strings.Join(got, "\n"), strings.Join(want, "\n  "))
	}
}

// containsAll reports whether s contains each "…"-separated part of want,
// in order.
func containsAll(s, want string) bool {
	for _, part := range strings.Split(want, "…") {
		i := strings.Index(s, part)
		if i < 0 {
			return false
		}
		s = s[i+len(part):]
	}
	return true
}

func TestConfigErrorFormat(t *testing.T) {
	tests := []struct {
		e    ConfigError
		want string
	}{
		{ConfigError{Pos: Pos{"router.toml", 12}, Element: "rt", Type: "IPLookup", Key: "rotes", Msg: "unknown", Suggest: "routes"},
			`router.toml:12: element "rt" (IPLookup): key "rotes": unknown, did you mean "routes"?`},
		{ConfigError{Pos: Pos{"r.toml", 3}, Element: "rt", Msg: "declared twice"}, `r.toml:3: element "rt": declared twice`},
		{ConfigError{Pos: Pos{"r.toml", 3}, Device: "lan", Type: "pcap", Key: "raed", Msg: "unknown", Suggest: "read"},
			`r.toml:3: device "lan" (pcap): key "raed": unknown, did you mean "read"?`},
		{ConfigError{Pos: Pos{"r.toml", 0}, Msg: "x"}, `r.toml: x`},
		{ConfigError{Msg: "x"}, `x`},
		{ConfigError{Pos: Pos{"r.toml", 1}, Type: "Tee", Msg: "x"}, `r.toml:1: Tee: x`},
	}
	for _, tt := range tests {
		if got := tt.e.Error(); got != tt.want {
			t.Errorf("got  %s\nwant %s", got, tt.want)
		}
	}
	list := ErrorList{&tests[0].e, &tests[1].e}
	if got := list.Error(); got != tests[0].want+"\n"+tests[1].want {
		t.Errorf("ErrorList: %q", got)
	}
}

func TestSuggest(t *testing.T) {
	names := []string{"routes", "routes_file", "miss", "workers", "Discard", "IPLookup", "rt", "type"}
	tests := []struct{ in, want string }{
		{"rotes", "routes"},
		{"routs_file", "routes_file"},
		{"wrokers", "workers"}, // transposition
		{"discard", "Discard"}, // case
		{"IPLokup", "IPLookup"},
		{"ms", ""},   // too short to guess "miss" from 2 edits
		{"rx", "rt"}, // one edit on a short name
		{"xyz", ""},  // nothing near
		{"typo", "type"},
		{"routes", ""}, // an exact match is not a suggestion
		{"", ""},
	}
	for _, tt := range tests {
		if got := suggest(tt.in, names); got != tt.want {
			t.Errorf("suggest(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}
