package graphfile

import (
	"reflect"
	"strings"
	"testing"
)

func TestParseLink(t *testing.T) {
	ep := func(in int, name, typ string, decl, hasArgs bool, args []string, out int) endpoint {
		return endpoint{InPort: in, OutPort: out, Name: name, Type: typ, Decl: decl, HasArgs: hasArgs, Args: args}
	}
	tests := []struct {
		in   string
		want []endpoint
		err  string
	}{
		{in: "a -> b", want: []endpoint{ep(-1, "a", "", false, false, nil, -1), ep(-1, "b", "", false, false, nil, -1)}},
		{in: "a->b->c", want: []endpoint{ep(-1, "a", "", false, false, nil, -1), ep(-1, "b", "", false, false, nil, -1), ep(-1, "c", "", false, false, nil, -1)}},
		{in: " a[1] -> [0]b ", want: []endpoint{ep(-1, "a", "", false, false, nil, 1), ep(0, "b", "", false, false, nil, -1)}},
		{in: "a [ 2 ] -> [ 3 ] b", want: []endpoint{ep(-1, "a", "", false, false, nil, 2), ep(3, "b", "", false, false, nil, -1)}},
		{in: "x :: Counter -> Discard", want: []endpoint{ep(-1, "x", "Counter", true, false, nil, -1), ep(-1, "Discard", "", false, false, nil, -1)}},
		{in: "x::Tee(2)[1] -> [1]y :: Join()", want: []endpoint{ep(-1, "x", "Tee", true, true, []string{"2"}, 1), ep(1, "y", "Join", true, true, nil, -1)}},
		{in: "FromDevice(lan) -> cls :: Classifier((tcp or udp) and dst port 53, -)",
			want: []endpoint{ep(-1, "FromDevice", "", false, true, []string{"lan"}, -1), ep(-1, "cls", "Classifier", true, true, []string{"(tcp or udp) and dst port 53", "-"}, -1)}},
		{in: `Print("a, b") -> Discard`, want: []endpoint{ep(-1, "Print", "", false, true, []string{`"a, b"`}, -1), ep(-1, "Discard", "", false, false, nil, -1)}},
		{in: `Print("a \" ) b") -> Discard`, want: []endpoint{ep(-1, "Print", "", false, true, []string{`"a \" ) b"`}, -1), ep(-1, "Discard", "", false, false, nil, -1)}},
		{in: "my-rt->x_1", want: []endpoint{ep(-1, "my-rt", "", false, false, nil, -1), ep(-1, "x_1", "", false, false, nil, -1)}},
		{in: "a\n  -> b", want: []endpoint{ep(-1, "a", "", false, false, nil, -1), ep(-1, "b", "", false, false, nil, -1)}},
		{in: "j :: Join", want: []endpoint{ep(-1, "j", "Join", true, false, nil, -1)}},

		{in: "", err: "expected an element name or type at end of link"},
		{in: "a", err: `a link needs "->"`},
		{in: "a ->", err: "expected an element name or type at end of link"},
		{in: "-> b", err: `expected an element name or type at column 1`},
		{in: "a -> -> b", err: "expected an element name or type at column 6"},
		{in: "a => b", err: `expected "->" at column 3`},
		{in: "a b", err: `expected "->" at column 3`},
		{in: "a, b", err: `expected "->" at column 2`},
		{in: "1a -> b", err: "expected an element name or type at column 1"},
		{in: "a[x y] -> b", err: "a port is written [N] with N a number ≥ 0, or [name] on a compound element at column 3"},
		{in: "a[-1] -> b", err: "a port is written [N]"},
		{in: "a[1 -> b", err: "a port is written [N]"},
		{in: "a[99999999999999999999] -> b", err: "too large"},
		{in: "a[65537] -> b", err: "too large"},
		{in: "[1]a -> b", err: `input port [1] before the first element "a"`},
		{in: "a -> b[1]", err: `output port [1] after the last element "b"`},
		{in: "a :: -> b", err: "expected an element name or type at column 6"},
		{in: "a :: T( -> b", err: "unbalanced parentheses at column 7"},
		{in: `a :: T("x) -> b`, err: "unterminated string in arguments"},
		{in: "T(a,,b) -> c", err: "argument 2 is empty"},
		{in: "T(a,) -> c", err: "argument 2 is empty"},
		{in: "T(a)) -> c", err: `expected "->" at column 5`},
		{in: "a :: T :: U -> b", err: `expected "->" at column 8`},
	}
	for _, tt := range tests {
		got, err := parseLink(tt.in)
		if tt.err != "" {
			if err == nil || !strings.Contains(err.Error(), tt.err) {
				t.Errorf("parseLink(%q) error %v, want %q", tt.in, err, tt.err)
			}
			if got != nil {
				t.Errorf("parseLink(%q) returned a chain with an error", tt.in)
			}
			continue
		}
		if err != nil {
			t.Errorf("parseLink(%q): %v", tt.in, err)
			continue
		}
		if !reflect.DeepEqual(got, tt.want) {
			t.Errorf("parseLink(%q)\n got %+v\nwant %+v", tt.in, got, tt.want)
		}
	}
}

func TestSplitArgs(t *testing.T) {
	tests := []struct {
		in   string
		want []string
		err  string
	}{
		{"", nil, ""},
		{"   ", nil, ""},
		{"a", []string{"a"}, ""},
		{" a , b ,c", []string{"a", "b", "c"}, ""},
		{"(tcp or udp) and dst port 53, -", []string{"(tcp or udp) and dst port 53", "-"}, ""},
		{`"a, b"`, []string{`"a, b"`}, ""},
		{`"a, \"b, c\"", d`, []string{`"a, \"b, c\""`, "d"}, ""},
		{"f(g(1, 2), 3), 4", []string{"f(g(1, 2), 3)", "4"}, ""},
		{`")", (`, nil, "unbalanced parentheses"},
		{"a)", nil, "unbalanced parentheses"},
		{`"abc`, nil, "unterminated string"},
		{"a,", nil, "argument 2 is empty"},
		{",", nil, "argument 1 is empty"},
	}
	for _, tt := range tests {
		got, err := splitArgs(tt.in)
		if tt.err != "" {
			if err == nil || !strings.Contains(err.Error(), tt.err) {
				t.Errorf("splitArgs(%q) error %v, want %q", tt.in, err, tt.err)
			}
			continue
		}
		if err != nil || !reflect.DeepEqual(got, tt.want) {
			t.Errorf("splitArgs(%q) = %q, %v; want %q", tt.in, got, err, tt.want)
		}
	}
}

func TestPositions(t *testing.T) {
	src := `# comment with [brackets] and = signs
title = "x" # trailing [comment]
multi = """
[not.a.table]
key = 1
"""
lit = '''
also = "not a key"'''
[forwarder]
workers = 2
[devices."my dev"]
driver = "testld"
"quoted.key" = 1
a.b.c = 3
inline = { x = 1, y = [1,
  2], z = { w = 'q' } }
[elements.rt]
routes = [
  "a",   # one
  # a comment line
  'b', """c
d""",
  "e", ]
when = 1979-05-27 07:32:00
after = 1
[graph]
links = ["x -> y", "y -> z",
"z -> w"]
`
	p := scanPositions(src)
	tests := []struct {
		path []string
		want int
	}{
		{[]string{"title"}, 2},
		{[]string{"multi"}, 3},
		{[]string{"not"}, 0},
		{[]string{"key"}, 0},
		{[]string{"lit"}, 7},
		{[]string{"also"}, 0},
		{[]string{"forwarder"}, 9},
		{[]string{"forwarder", "workers"}, 10},
		{[]string{"devices"}, 11},
		{[]string{"devices", "my dev"}, 11},
		{[]string{"devices", "my dev", "driver"}, 12},
		{[]string{"devices", "my dev", "quoted.key"}, 13},
		{[]string{"devices", "my dev", "a", "b", "c"}, 14},
		{[]string{"devices", "my dev", "a"}, 14},
		{[]string{"devices", "my dev", "inline", "x"}, 15},
		{[]string{"devices", "my dev", "inline", "z", "w"}, 16},
		{[]string{"elements", "rt"}, 17},
		{[]string{"elements", "rt", "routes"}, 18},
		{[]string{"elements", "rt", "when"}, 24},
		{[]string{"elements", "rt", "after"}, 25},
		{[]string{"elements", "rt", "nokey"}, 17}, // falls back to the table
		{[]string{"graph", "links"}, 27},
	}
	for _, tt := range tests {
		if got := p.line(tt.path...); got != tt.want {
			t.Errorf("line(%q) = %d, want %d", tt.path, got, tt.want)
		}
	}
	items := p.items[pathKey("elements", "rt", "routes")]
	if want := []int{19, 21, 21, 23}; !reflect.DeepEqual(items, want) {
		t.Errorf("routes items at lines %v, want %v", items, want)
	}
	if got := p.item(2, "graph", "links"); got != 28 {
		t.Errorf("links item 2 at line %d, want 28", got)
	}
	if got := p.item(7, "graph", "links"); got != 27 {
		t.Errorf("missing item: line %d, want the key's 27", got)
	}
}

func TestLinkLinesInMultilineArrays(t *testing.T) {
	// Each link error points at the line of its own string, wherever the
	// array puts it.
	src := dev + `[graph]
links = [ "TestLdSource(d) -> TestLdSink(d)", "TestLdSource(d) -> Nope",
  # comment "with a string"
  '''TestLdSource(d)
     -> Nope2''', "TestLdSource(d) -> Nope3" ]
`
	_, errs := parseSrc(t, src)
	checkErrors(t, errs, []string{
		`:4: unknown element or type "Nope"`,
		`:6: unknown element or type "Nope2"`,
		`:7: unknown element or type "Nope3"`,
	})
}
