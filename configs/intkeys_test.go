package configs_test

import (
	"regexp"
	"strings"
	"testing"

	"github.com/junction-dataplane/junction/elements"
	"github.com/junction-dataplane/junction/pipeline"
)

// TestIntKeysTakeTOMLIntegers: wherever an element's manual says a key
// takes an int ("int", "int or name", "[]int"), a TOML integer is accepted
// as that key's value: the value may be out of range or the graph
// incomplete, but the loader never answers "want string, got integer".
func TestIntKeysTakeTOMLIntegers(t *testing.T) {
	isInt := regexp.MustCompile(`\bint\b`)
	checked := 0
	for _, name := range elements.Names() {
		typ, _ := elements.Lookup(name)
		for _, k := range typ.Doc.Keys {
			if !isInt.MatchString(k.Type) {
				continue
			}
			val := "1"
			if strings.HasPrefix(k.Type, "[]") {
				val = "[1]"
			}
			src := "[elements.x]\ntype = \"" + name + "\"\n" + k.Name + " = " + val + "\n[graph]\nlinks = [\"x -> Discard\"]\n"
			_, err := pipeline.Parse("int.toml", []byte(src))
			if err != nil && strings.Contains(err.Error(), "got integer") {
				t.Errorf("%s.%s (manual: %s): %v", name, k.Name, k.Type, err)
			}
			checked++
		}
	}
	if checked == 0 {
		t.Fatal("no key of type int found: the test checks nothing")
	}
}

// TestICMPErrorNumericType: ICMPError's icmp_type and icmp_code take
// numbers as TOML integers, as the manual says ("int or name").
func TestICMPErrorNumericType(t *testing.T) {
	src := `[devices.a]
driver = "gen"
[elements.err]
type = "ICMPError"
src = "10.0.0.1"
icmp_type = 11
icmp_code = 0
[graph]
links = ["FromDevice(a) -> err -> Discard"]
`
	if _, err := pipeline.Parse("icmp.toml", []byte(src)); err != nil {
		t.Fatal(err)
	}
}
