package elements

import (
	"bytes"
	"strings"
	"testing"
)

func TestWriteDoc(t *testing.T) {
	typ := &Type{
		Name: "DocFmtTest", In: 1, Out: 2, Optional: []int{1},
		Doc: Doc{
			Synopsis: "DocFmtTest(limit, label)",
			Summary:  "passes packets below a limit",
			Text:     "Longer words.\n\nSecond paragraph.",
			Ports:    "input 0: Ethernet frames\noutput 0: below the limit\noutput 1: the rest",
			Keys: []Key{
				{Name: "limit", Type: "int", Required: true, Doc: "the limit in bytes"},
				{Name: "label", Type: "string", Default: `"x"`},
			},
			Stats:   `drop "too big": above the limit`,
			Example: "FromDevice(lan) -> DocFmtTest(100) -> Discard",
			SeeAlso: "Discard",
		},
	}
	var buf bytes.Buffer
	if err := WriteDoc(&buf, typ); err != nil {
		t.Fatal(err)
	}
	out := buf.String()
	order := []string{"NAME", "    DocFmtTest - passes packets below a limit", "SYNOPSIS", "    DocFmtTest(limit, label)",
		"DESCRIPTION", "Second paragraph.", "PORTS", "1 input, 2 outputs; output 1 may be left unconnected", "output 1: the rest",
		"KEYS", "name", "default", "required", "limit", "int", "yes", "label", `"x"`, "no", "the limit in bytes",
		"STATS", `drop "too big"`, "EXAMPLE", "    FromDevice(lan) -> DocFmtTest(100) -> Discard", "SEE ALSO", "Discard"}
	rest := out
	for _, want := range order {
		i := strings.Index(rest, want)
		if i < 0 {
			t.Fatalf("missing (or out of order) %q in:\n%s", want, out)
		}
		rest = rest[i+len(want):]
	}
}

func TestWriteDocMinimal(t *testing.T) {
	var buf bytes.Buffer
	if err := WriteDoc(&buf, &Type{Name: "Bare", In: 1, Out: -1}); err != nil {
		t.Fatal(err)
	}
	out := buf.String()
	for _, want := range []string{"NAME\n    Bare\n", "SYNOPSIS\n    Bare\n", "N (set by the config)", "KEYS\n    none\n"} {
		if !strings.Contains(out, want) {
			t.Errorf("missing %q in:\n%s", want, out)
		}
	}
	for _, absent := range []string{"STATS", "EXAMPLE", "SEE ALSO", "DESCRIPTION"} {
		if strings.Contains(out, absent) {
			t.Errorf("empty section %s printed:\n%s", absent, out)
		}
	}
}

func TestWriteIndex(t *testing.T) {
	var buf bytes.Buffer
	WriteIndex(&buf, []*Type{{Name: "A", Doc: Doc{Summary: "first"}}, {Name: "LongerName", Doc: Doc{Summary: "second"}}})
	lines := strings.Split(strings.TrimSpace(buf.String()), "\n")
	if len(lines) != 2 || strings.Index(lines[0], "first") != strings.Index(lines[1], "second") {
		t.Errorf("index not aligned:\n%s", buf.String())
	}
}

func TestWriteDocWraps(t *testing.T) {
	long := strings.Repeat("word ", 60)
	var buf bytes.Buffer
	WriteDoc(&buf, &Type{Name: "W", In: 1, Out: 1, Doc: Doc{Text: long, Example: "  " + long}})
	out := buf.String()
	prose, code := 0, 0
	for _, l := range strings.Split(out, "\n") {
		if len(l) > docWidth {
			if strings.HasPrefix(l, "      word") {
				code++ // the example keeps its lines
				continue
			}
			t.Errorf("line of %d bytes: %q", len(l), l)
		}
		if strings.HasPrefix(l, "    word") {
			prose++
		}
	}
	if prose < 3 || code != 1 {
		t.Errorf("prose lines %d, long code lines %d:\n%s", prose, code, out)
	}
}
