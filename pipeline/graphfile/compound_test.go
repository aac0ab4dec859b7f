package graphfile

import (
	"fmt"
	"reflect"
	"sort"
	"strings"
	"testing"
	"time"
)

// sideDef is a compound used by the tests below: one device's side, with
// an input for what leaves by the device and outputs for what came in.
const sideDef = `
[devices.a]
driver = "testld"
[devices.b]
driver = "testld"

[compounds.side]
params  = ["dev", "lim"]
inputs  = ["out"]
outputs = ["pass", "rest"]
links = [
  "TestLdSource($dev) -> cls :: TestLdRules(one, two, ${dev}three)",
  "cls[0] -> f -> [pass]output",
  "cls[1] -> [rest]output",
  "cls[2] -> TestLdDiscard",
  "input[out] -> TestLdSink($dev)",
]

[compounds.side.elements.f]
type  = "TestLdFilter"
limit = "$lim"
`

func TestCompoundFlattens(t *testing.T) {
	g := mustParse(t, sideDef+`
[elements.left]
type = "side"
dev  = "a"
lim  = 7

[graph]
links = [
  "left[pass] -> j :: TestLdJoin -> right :: side(b, 3)",
  "right[0] -> [1]j",
  "left[1] -> TestLdDiscard",
  "right[rest] -> TestLdDiscard",
  "TestLdSource(a) -> [out]left",
]`)
	var names []string
	for _, e := range g.Elements {
		names = append(names, e.Name)
	}
	want := []string{
		"left/f", "j", "TestLdDiscard@1", "TestLdDiscard@2", "TestLdSource(a)@1",
		"left/TestLdSource(a)@1", "left/cls", "left/TestLdDiscard@1", "left/TestLdSink(a)@1",
		"right/f", "right/TestLdSource(b)@1", "right/cls", "right/TestLdDiscard@1", "right/TestLdSink(b)@1",
	}
	sort.Strings(names)
	sort.Strings(want)
	if !reflect.DeepEqual(names, want) {
		t.Fatalf("elements:\n%v\nwant\n%v", names, want)
	}
	var links []string
	for _, lk := range g.Links {
		links = append(links, fmt.Sprintf("%s[%d]->[%d]%s", lk.From, lk.FromPort, lk.ToPort, lk.To))
	}
	sort.Strings(links)
	wantLinks := []string{
		"TestLdSource(a)@1[0]->[0]left/TestLdSink(a)@1",
		"j[0]->[0]right/TestLdSink(b)@1",
		"left/TestLdSource(a)@1[0]->[0]left/cls",
		"left/cls[0]->[0]left/f",
		"left/cls[1]->[0]TestLdDiscard@1",
		"left/cls[2]->[0]left/TestLdDiscard@1",
		"left/f[0]->[0]j",
		"right/TestLdSource(b)@1[0]->[0]right/cls",
		"right/cls[0]->[0]right/f",
		"right/cls[1]->[0]TestLdDiscard@2",
		"right/cls[2]->[0]right/TestLdDiscard@1",
		"right/f[0]->[1]j",
	}
	if !reflect.DeepEqual(links, wantLinks) {
		t.Fatalf("links:\n%s\nwant\n%s", strings.Join(links, "\n"), strings.Join(wantLinks, "\n"))
	}
	// Parameters: a whole "$lim" takes the number as given, "${dev}three"
	// is text.
	if c := g.Element("left/f").Config.(*ldFilterConfig); c.Limit != 7 || c.Mode != "all" {
		t.Errorf("left/f config %+v, want limit 7", c)
	}
	if c := g.Element("right/f").Config.(*ldFilterConfig); c.Limit != 3 {
		t.Errorf("right/f config %+v, want limit 3 (inline argument)", c)
	}
	if r := g.Element("right/cls").Config.(*ldRulesConfig).Rules; !reflect.DeepEqual(r, []string{"one", "two", "bthree"}) {
		t.Errorf("right/cls rules %q", r)
	}
	if e := g.Element("left/cls"); e.Instance != "left" || e.Pos.Line != 12 {
		t.Errorf("left/cls: instance %q line %d, want left, 12 (the line in the definition)", e.Instance, e.Pos.Line)
	}
	wantInst := []Instance{{Name: "left", Compound: "side", Pos: Pos{"t.toml", 23}}, {Name: "right", Compound: "side", Pos: Pos{"t.toml", 30}}}
	if len(g.Instances) != 2 || *g.Instances[0] != wantInst[0] || *g.Instances[1] != wantInst[1] {
		t.Errorf("instances %+v %+v, want %+v", g.Instances[0], g.Instances[1], wantInst)
	}
}

// pairQuad defines pair, two filters, and quad, two pairs.
const pairQuad = `
[devices.a]
driver = "testld"

[compounds.pair]
inputs  = ["in"]
outputs = ["out"]
links   = ["input -> x :: TestLdFilter -> y :: TestLdFilter -> output"]

[compounds.quad]
inputs  = ["in"]
outputs = ["out"]
links   = ["input[in] -> p :: pair -> q :: pair -> [out]output"]
`

func TestCompoundNested(t *testing.T) {
	g := mustParse(t, pairQuad+`
[compounds.both]
params = ["dev"]
links  = ["TestLdSource($dev) -> quad -> TestLdSink($dev)"]

[graph]
links = ["top :: both(a)", "TestLdSource(a) -> pass :: pair -> TestLdSink(a)"]`)
	var path []string
	for from := "top/TestLdSource(a)@1"; ; {
		var next *Link
		for i := range g.Links {
			if g.Links[i].From == from {
				next = &g.Links[i]
			}
		}
		if next == nil {
			break
		}
		path = append(path, next.To)
		from = next.To
	}
	want := []string{"top/quad@1/p/x", "top/quad@1/p/y", "top/quad@1/q/x", "top/quad@1/q/y", "top/TestLdSink(a)@1"}
	if !reflect.DeepEqual(path, want) {
		t.Fatalf("path %v, want %v", path, want)
	}
	if len(g.Instances) != 5 {
		t.Fatalf("%d instances, want 5 (top, top/quad@1, its p and q, pass)", len(g.Instances))
	}
	found := false
	for _, in := range g.Instances {
		if in.Name == "top/quad@1/p" {
			found = true
			if in.Parent != "top/quad@1" || in.Compound != "pair" || in.Pos.Line != 13 {
				t.Errorf("instance %+v, want in top/quad@1, of pair, at line 13", in)
			}
		}
	}
	if !found {
		t.Error("no instance top/quad@1/p")
	}
}

// TestCompoundSameAsHandWritten: a graph with compounds flattens to the
// graph written out by hand, but for the element names: the runtime gets
// the same elements, configs and links.
func TestCompoundSameAsHandWritten(t *testing.T) {
	a := mustParse(t, sideDef+`
[graph]
links = [
  "l :: side(a, 1) -> TestLdDiscard",
  "l[rest] -> TestLdDiscard",
  "TestLdSource(b) -> [out]l",
]`)
	b := mustParse(t, `
[devices.a]
driver = "testld"
[devices.b]
driver = "testld"
[elements.f]
type  = "TestLdFilter"
limit = 1
[graph]
links = [
  "TestLdSource(a) -> cls :: TestLdRules(one, two, athree)",
  "cls[0] -> f -> TestLdDiscard",
  "cls[1] -> TestLdDiscard",
  "cls[2] -> TestLdDiscard",
  "TestLdSource(b) -> TestLdSink(a)",
]`)
	shape := func(g *Graph) []string {
		var out []string
		for _, lk := range g.Links {
			f, t := g.Element(lk.From), g.Element(lk.To)
			out = append(out, fmt.Sprintf("%s%+v[%d] -> [%d]%s%+v", f.Type.Name, f.Config, lk.FromPort, lk.ToPort, t.Type.Name, t.Config))
		}
		sort.Strings(out)
		return out
	}
	if sa, sb := shape(a), shape(b); !reflect.DeepEqual(sa, sb) {
		t.Fatalf("flattened:\n%s\nhand-written:\n%s", strings.Join(sa, "\n"), strings.Join(sb, "\n"))
	}
}

func TestCompoundErrors(t *testing.T) {
	dev := `
[devices.a]
driver = "testld"
`
	tests := []struct {
		name string
		src  string
		want []string
	}{
		{"instantiates itself", dev + `
[compounds.loop]
inputs  = ["in"]
outputs = ["out"]
links   = ["input -> inner :: loop -> output"]
[graph]
links = ["TestLdSource(a) -> loop -> TestLdSink(a)"]`,
			[]string{`:8: element "loop@1/inner" (compound loop): compound "loop" instantiates itself: loop -> loop (in compound loop, instance loop@1 at line 10)`}},
		{"instantiates itself through another", dev + `
[compounds.ping]
inputs  = ["in"]
outputs = ["out"]
links   = ["input -> pong -> output"]
[compounds.pong]
inputs  = ["in"]
outputs = ["out"]
links   = ["input -> ping -> output"]
[graph]
links = ["TestLdSource(a) -> ping -> TestLdSink(a)"]`,
			[]string{`:12: element "ping@1/pong@1/ping@1" (compound ping): compound "ping" instantiates itself: ping -> pong -> ping (in compound pong, instance ping@1/pong@1 at line 8; compound ping, instance ping@1 at line 14)`}},
		{"parameter missing, unknown, unused, undeclared", dev + `
[compounds.c]
params = ["dev", "spare"]
links  = ["TestLdSource($dev) -> TestLdSink($devv)"]
[elements.x]
type = "c"
deev = "a"
[graph]
links = ["y :: c(a, b, extra)"]`,
			[]string{`:6: compound "c": key "params": parameter "spare" is not used`,
				`:7: compound "c": $devv is not a parameter (params: dev, spare), did you mean "dev"?`,
				`:8: element "x" (compound c): key "dev": required: a parameter of the compound (params: dev, spare)`,
				`:8: element "x" (compound c): key "spare": required`,
				`:10: element "x" (compound c): key "deev": unknown (params: dev, spare), did you mean "dev"?`,
				`:12: element "y" (compound c): too many arguments: c takes 2 (params: dev, spare), got 3`}},
		{"unconnected ports", dev + `
[compounds.c]
inputs  = ["in", "spare"]
outputs = ["out", "idle"]
links   = ["input[in] -> TestLdFilter -> [out]output"]
[graph]
links = ["TestLdSource(a) -> x :: c"]`,
			[]string{`:6: compound "c": key "inputs": input "spare" leads nowhere`,
				`:7: compound "c": key "outputs": output "idle": nothing leads to it`,
				`:10: element "x" (compound c): input [spare] is not connected`,
				`:10: element "x" (compound c): output [out] is not connected`,
				`:10: element "x" (compound c): output [idle] is not connected`}},
		{"unknown compound port", dev + `
[compounds.c]
inputs  = ["in"]
outputs = ["out"]
links   = ["input[inn] -> TestLdFilter -> [out]output"]
[graph]
links = ["TestLdSource(a) -> x :: c[outt] -> TestLdSink(a)", "x[3] -> TestLdSink(a)"]`,
			[]string{`:8: link "input[inn] -> TestLdFilter -> [out]output": compound c has no input "inn" (inputs: in), did you mean "in"? (in compound c, instance x at line 10)`,
				`:10: link "TestLdSource(a) -> x :: c[outt] -> TestLdSink(a)": compound c has no output "outt" (outputs: out), did you mean "out"?`,
				`:10: element "x" (compound c): has no output [3]: it has 1 output (out)`}},
		{"two definitions of one name", dev + `
[compounds.c]
links = ["TestLdSource(a) -> TestLdSink(a)"]
[compounds.c]
links = ["TestLdSource(a) -> TestLdSink(a)"]
[graph]
links = ["x :: c"]`,
			[]string{`:7: TOML syntax: `}},
		{"a compound named as an element type", dev + `
[compounds.TestLdFilter]
links = ["TestLdSource(a) -> TestLdSink(a)"]
[graph]
links = ["TestLdSource(a) -> TestLdSink(a)"]`,
			[]string{`:5: compound "TestLdFilter": an element type has this name`}},
		{"error inside a compound, at both uses", dev + `
[compounds.c]
params = ["lim"]
links  = ["TestLdSource(a) -> f :: TestLdFilter(all, $lim) -> TestLdSink(a)"]
[graph]
links = ["x :: c(-1)", "y :: c(2)", "z :: c(-2)"]`,
			[]string{`:7: element "x/f" (TestLdFilter): key "limit": `,
				`(in compound c, instance x at line 9)`}},
		{"a port of a bad name", dev + `
[compounds.c]
inputs = ["in put"]
links  = ["TestLdSource(a) -> TestLdSink(a)"]
[graph]
links = ["x :: c"]`,
			[]string{`:6: compound "c": key "inputs": bad name "in put"`}},
		{"output declared, a named port on an element", dev + `
[compounds.c]
links  = ["TestLdSource(a) -> output :: TestLdSink(a)", "TestLdSource(a) -> TestLdFilter[x] -> TestLdSink(a)"]
[graph]
links = ["x :: c"]`,
			[]string{`:6: output is the compound's own ports, not an element to declare (in compound c, instance x at line 8)`,
				`:6: link "TestLdSource(a) -> TestLdFilter[x] -> TestLdSink(a)": "TestLdFilter@1" has numbered ports: write [N] ([x] names a port of a compound element only) (in compound c, instance x at line 8)`}},
		{"an output connected twice inside", dev + `
[compounds.c]
inputs = ["in"]
links  = ["input -> TestLdSink(a)", "input -> TestLdSink(a)"]
[graph]
links = ["TestLdSource(a) -> c"]`,
			[]string{`:7: element "input" (compound c): input[in] is connected twice (first at line 7)`}},
		{"a broken definition: its uses report nothing more", dev + `
[compounds.c]
inputs  = ["in"]
outputs = ["out"]
links   = ["input -> TestLdFilter($bad) -> output"]
[graph]
links = ["TestLdSource(a) -> j :: TestLdJoin -> x :: c -> [1]j"]`,
			[]string{`:8: compound "c": $bad is not a parameter (it has none: declare params = [...])`}},
		{"unknown type suggests a compound", dev + `
[compounds.sided]
links = ["TestLdSource(a) -> TestLdSink(a)"]
[elements.x]
type = "sidde"
[graph]
links = ["x -> TestLdSink(a)"]`,
			[]string{`:8: element "x": key "type": unknown element type "sidde", did you mean "sided"?`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, errs := parseSrc(t, tt.src)
			if tt.name == "error inside a compound, at both uses" {
				// Two of the three uses are wrong: two errors at the
				// definition's line, each naming its use.
				if len(errs) != 2 || !strings.Contains(errs[1].Error(), "instance z at line 9") {
					t.Fatalf("errors:\n%v\nwant two, for x and z", errs)
				}
				errs = errs[:1]
				tt.want = []string{tt.want[0] + `must be ≥ 0, got -1 ` + tt.want[1]}
			}
			checkErrors(t, errs, tt.want)
		})
	}
}

func TestParseNamedPorts(t *testing.T) {
	if _, err := parseLink("[in]a -> b"); err == nil || !strings.Contains(err.Error(), "input port [in] before the first element") {
		t.Errorf("[in]a -> b: %v", err)
	}
	chain, err := parseLink("a[arp] -> [1]c[x_2] -> [q]d")
	if err != nil {
		t.Fatal(err)
	}
	if chain[0].OutName != "arp" || chain[0].OutPort != 0 || chain[1].InName != "" || chain[1].InPort != 1 ||
		chain[1].OutName != "x_2" || chain[2].InName != "q" || chain[2].OutPort != -1 {
		t.Errorf("chain %+v", chain)
	}
}

func TestExpandParams(t *testing.T) {
	args := map[string]any{"dev": "lan", "mtu": int64(1500), "rules": []any{"arp", "ip"}}
	for in, want := range map[string]string{
		"$dev":                 "lan",
		"x${dev}y $mtu":        "xlany 1500",
		"Classifier($rules)":   "Classifier(arp, ip)",
		"$$5 and $${dev}":      "$5 and ${dev}",
		"no parameters at all": "no parameters at all",
	} {
		got, err := expand(in, func(p string) string { return argText(args[p]) })
		if err != nil || got != want {
			t.Errorf("expand(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
	for _, in := range []string{"$", "a $ b", "${dev", "${}", "$1"} {
		if _, err := expand(in, func(string) string { return "" }); err == nil {
			t.Errorf("expand(%q): no error", in)
		}
	}
	if v := substitute(map[string]any{"m": "$mtu", "l": []any{"$rules", "x$dev"}}, args); !reflect.DeepEqual(v,
		map[string]any{"m": int64(1500), "l": []any{[]any{"arp", "ip"}, "xlan"}}) {
		t.Errorf("substitute: %#v", v)
	}
}

// TestCompoundDOT: each instance is a cluster, nested as written, its
// elements labelled by their names inside it; Graphviz accepts it without
// a warning.
func TestCompoundDOT(t *testing.T) {
	g := mustParse(t, pairQuad+`
[graph]
links = ["TestLdSource(a) -> four :: quad -> TestLdSink(a)"]`)
	got := g.DOT()
	for _, want := range []string{
		"\t\"TestLdSink(a)@1\" [label=\"TestLdSink\"];\n\tsubgraph \"cluster four\" {\n\t\tlabel=\"four :: quad\";\n",
		"\t\tsubgraph \"cluster four/p\" {\n\t\t\tlabel=\"p :: pair\";\n\t\t\tstyle=\"rounded,dashed\";\n\t\t\t\"four/p/x\" [label=\"x :: TestLdFilter\"];\n\t\t\t\"four/p/y\" [label=\"y :: TestLdFilter\"];\n\t\t}\n",
		"\t\"four/q/y\" -> \"TestLdSink(a)@1\" [label=\"[0] -> [0]\"];\n",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("DOT lacks\n%s\nin\n%s", want, got)
		}
	}
	dotAccepts(t, got)
}

// TestCompoundBomb: uses that multiply (each level using the next many
// times) are refused at the bound with one error, without building
// 64^8 uses.
func TestCompoundBomb(t *testing.T) {
	var b strings.Builder
	b.WriteString("[devices.a]\ndriver = \"testld\"\n")
	for lv := range 8 {
		fmt.Fprintf(&b, "[compounds.c%d]\nlinks = [", lv)
		for i := range 64 {
			if lv == 7 {
				fmt.Fprintf(&b, "\"TestLdSource(a) -> TestLdSink(a)\", ")
			} else {
				fmt.Fprintf(&b, "\"x%d :: c%d\", ", i, lv+1)
			}
		}
		b.WriteString("]\n")
	}
	b.WriteString("[graph]\nlinks = [\"top :: c0\"]\n")
	start := time.Now()
	_, errs := parseSrc(t, b.String())
	if d := time.Since(start); d > time.Minute { // about 1 s of CPU; the machine may be shared
		t.Errorf("took %v", d)
	}
	if len(errs) != 1 || !strings.Contains(errs[0].Error(), "(MaxFlatElements)") {
		t.Fatalf("errors: %v", errs)
	}
}

// TestCompoundTopLevelNames: /name inside a compound is the element of the
// file's top level, shared by every use; a port number may be a parameter.
func TestCompoundTopLevelNames(t *testing.T) {
	g := mustParse(t, `
[devices.a]
driver = "testld"
[devices.b]
driver = "testld"
[compounds.side]
params = ["dev", "port"]
links  = ["TestLdSource($dev) -> [$port]/j", "/r[$port] -> TestLdSink($dev)"]
[graph]
links = [
  "j :: TestLdJoin -> r :: TestLdRoute(2, 10.0.0.0/8 out 0, 0.0.0.0/0 out 1)",
  "x :: side(a, 0)",
  "y :: side(b, 1)",
]`)
	var links []string
	for _, lk := range g.Links {
		links = append(links, fmt.Sprintf("%s[%d]->[%d]%s", lk.From, lk.FromPort, lk.ToPort, lk.To))
	}
	sort.Strings(links)
	want := []string{"j[0]->[0]r", "r[0]->[0]x/TestLdSink(a)@1", "r[1]->[0]y/TestLdSink(b)@1",
		"x/TestLdSource(a)@1[0]->[0]j", "y/TestLdSource(b)@1[0]->[1]j"}
	if !reflect.DeepEqual(links, want) {
		t.Fatalf("links %v, want %v", links, want)
	}
	_, errs := parseSrc(t, `
[devices.a]
driver = "testld"
[compounds.side]
links  = ["TestLdSource(a) -> /jj", "TestLdSource(a) -> /j :: TestLdJoin"]
[graph]
links = ["j :: TestLdJoin -> TestLdSink(a)", "x :: side"]`)
	checkErrors(t, errs, []string{
		`:5: link "TestLdSource(a) -> /j :: TestLdJoin": /j names an element of the top level: a declaration names one of its own`,
		`:5: no element "jj" at the top of the file for /jj, did you mean "j"? (in compound side, instance x at line 7)`,
	})
}
