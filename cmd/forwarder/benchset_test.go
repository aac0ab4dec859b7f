package main

import (
	"strings"
	"testing"
)

// TestBenchSetErrors: -set errors are Junction's: the key, what is wrong
// with it, the nearest valid key; never the TOML library's "toml: line 1
// (last key ...)". A bad -set is wrong usage: exit status 2.
func TestBenchSetErrors(t *testing.T) {
	for _, c := range []struct {
		set  string
		want string
	}{
		{`routes=[1]`, `-set: IPLookup: key "routes": item 1: want string, got integer 1`},
		{`rutes=["0.0.0.0/0 out 0"]`, `key "rutes": unknown, did you mean "routes"?`},
		{`a b=1`, `"a b": a key is letters, digits, _ and -`},
	} {
		code, _, errs := forwarder(t, "bench", "-element", "IPLookup", "-set", c.set, "-duration", "50ms")
		if code != 2 || !strings.Contains(errs, c.want) || strings.Contains(errs, "toml:") {
			t.Errorf("-set %s: exit %d, stderr %q, want %q", c.set, code, errs, c.want)
		}
	}
	code, _, errs := forwarder(t, "bench", "-element", "Classifier", "-set", `rules=["tcp", 3]`, "-duration", "50ms")
	if code != 2 || !strings.Contains(errs, `key "rules": item 2: want string, got integer 3`) {
		t.Errorf("Classifier rules: exit %d, stderr %q", code, errs)
	}
}
