package graphfile

import (
	"errors"
	"testing"

	_ "github.com/junction-dataplane/junction/elements/ip" // IPLookup
)

// twoLookups is a graph whose two IPLookups (rt and rte) read one table.
const twoLookups = dev + `
[tables.main]
routes = ["10.1.0.0/24 out 0", "10.2.0.0/24 via 10.1.0.2 out 1"]

[elements.rte]
type  = "IPLookup"
table = "main"

[graph]
links = ["TestLdSource(d) -> rt :: IPLookup -> TestLdSink(d)", "rt[1] -> rte -> TestLdSink(d)", "rte[1] -> TestLdSink(d)"]
`

func TestTables(t *testing.T) {
	g, err := Parse("t.toml", []byte(twoLookups))
	if err != nil {
		t.Fatal(err)
	}
	tb := g.Table("main")
	if tb == nil || tb.Pos.Line != 4 || len(tb.Users) != 2 || tb.Config.Ports() != 2 {
		t.Fatalf("table main: %+v", tb)
	}
	for _, name := range []string{"rt", "rte"} {
		if e := g.Element(name); e == nil || e.Out != 2 {
			t.Errorf("%s: %+v, want 2 outputs from the table's routes", name, e)
		}
	}
}

func TestTableErrors(t *testing.T) {
	lookup := `
[graph]
links = ["TestLdSource(d) -> rt :: IPLookup -> TestLdSink(d)"]`
	tests := []struct {
		name string
		src  string
		want []string
	}{
		{"two tables of one name", dev + `
[tables.main]
routes = ["10.0.0.0/8 out 0"]
[tables.main]
routes = ["11.0.0.0/8 out 0"]` + lookup,
			[]string{`:6: TOML syntax: …tables.main…already`}},
		{"unknown table", dev + `
[tables.main]
routes = ["10.0.0.0/8 out 0"]
[elements.rt2]
type = "IPLookup"
table = "mian"
[graph]
links = ["TestLdSource(d) -> rt2 -> TestLdSink(d)", "TestLdSource(d) -> rt :: IPLookup -> TestLdSink(d)"]`,
			[]string{`:8: element "rt2" (IPLookup): key "table": reads route table "mian", which the graph does not declare, did you mean "main"?`}},
		{"no table at all", dev + lookup,
			[]string{`:5: element "rt" (IPLookup): key "table": reads route table "main", which the graph does not declare (declare it as [tables.main]`}},
		{"mixed families", dev + `
[tables.main]
family = "ip4"
routes = ["10.0.0.0/8 out 0",
  "2001:db8::/32 out 0"]` + lookup,
			[]string{`:7: table "main": key "routes": entry 2: 2001:db8::/32 is not an IPv4 prefix (family = "ip4")`}},
		{"bad family", dev + `
[tables.main]
family = "ip5"
routes = ["10.0.0.0/8 out 0"]` + lookup,
			[]string{`:5: table "main": key "family": "ip5": want "ip4" or "ip6"`}},
		{"unknown key", dev + `
[tables.main]
rotues = ["10.0.0.0/8 out 0"]` + lookup,
			[]string{`:5: table "main": key "rotues": unknown (keys: routes, …), did you mean "routes"?`}},
		{"bad route", dev + `
[tables.main]
routes = ["10.0.0.0/8 out 0",
  "10.1.0.0/8 out 0"]` + lookup,
			[]string{`:6: table "main": key "routes": entry 2 …host bits set`}},
		{"unread table", dev + `
[tables.main]
routes = ["10.0.0.0/8 out 0"]
[tables.spare]
routes = ["10.0.0.0/8 out 0"]` + lookup,
			[]string{`:6: table "spare": no IPLookup reads it`}},
		{"table key on a reader", dev + `
[tables.main]
routes = ["10.0.0.0/8 out 0"]
[elements.rt2]
type = "IPLookup"
offload = ["d"]
[graph]
links = ["TestLdSource(d) -> rt2 -> TestLdSink(d)"]`,
			[]string{`:8: element "rt2" (IPLookup): key "offload": belongs to the table this IPLookup reads: set it in [tables.main]`}},
		{"the only reader broken: no unread-table error", dev + `
[tables.main]
routes = ["10.0.0.0/8 out 0"]
[elements.rt]
type = "IPLookup"
mis = 1
[graph]
links = ["TestLdSource(d) -> rt -> TestLdSink(d)"]`,
			[]string{`:8: element "rt" (IPLookup): key "mis": unknown, did you mean "miss"?`}},
		{"bad name", dev + `
[tables."a b"]
routes = ["10.0.0.0/8 out 0"]` + lookup,
			[]string{`:4: table "a b": bad table name`, `:7: element "rt" (IPLookup): key "table": reads route table "main"`}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Parse("t.toml", []byte(tc.src))
			var errs ErrorList
			if !errors.As(err, &errs) {
				t.Fatalf("error %v, want an ErrorList", err)
			}
			checkErrors(t, errs, tc.want)
		})
	}
}
