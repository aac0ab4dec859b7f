package configs_test

import (
	"strings"
	"testing"

	"github.com/junction-dataplane/junction/elements"
	"github.com/junction-dataplane/junction/pipeline"
)

// TestForeignTypeNames: a type name from another tool gets Junction's
// type as the suggestion, inline and in an [elements] table.
func TestForeignTypeNames(t *testing.T) {
	for _, tc := range []struct{ name, want string }{
		{"Drop", "Discard"}, {"drop", "Discard"}, {"DecIPTTL", "DecTTL"},
		{"RadixIPLookup", "IPLookup"}, {"IPFilter", "Classifier"}, {"Masquerade", "SNAT"},
		{"Discrad", "Discard"}, // a plain typo still finds the nearest
	} {
		if got := elements.SuggestType(tc.name); got != tc.want {
			t.Errorf("SuggestType(%q) = %q, want %q", tc.name, got, tc.want)
		}
	}
	inline := "[devices.a]\ndriver = \"gen\"\n[graph]\nlinks = [\"FromDevice(a) -> Drop\"]\n"
	table := "[devices.a]\ndriver = \"gen\"\n[elements.d]\ntype = \"Drop\"\n[graph]\nlinks = [\"FromDevice(a) -> d\"]\n"
	for _, src := range []string{inline, table} {
		_, err := pipeline.Parse("alias.toml", []byte(src))
		if err == nil || !strings.Contains(err.Error(), `did you mean "Discard"?`) {
			t.Errorf("%s: got %v, want a suggestion of Discard", src, err)
		}
	}
}
