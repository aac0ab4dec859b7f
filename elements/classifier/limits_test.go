package classifier

import (
	"fmt"
	"runtime"
	"strings"
	"testing"
)

// portRules returns n rules "udp and dst port N", the shape whose decision
// graph grows fastest with the rule count.
func portRules(n int) []string {
	rules := make([]string, n)
	for i := range rules {
		rules[i] = fmt.Sprintf("udp and dst port %d", i+1)
	}
	return rules
}

// TestRuleCountLimit: a Classifier with more than maxRules rules is refused
// at once, naming the key and the limit (10,000 such rules took 660 MB to
// check), and one at the limit compiles within a bounded amount of memory.
func TestRuleCountLimit(t *testing.T) {
	c := &Config{Rules: portRules(10_000)}
	err := c.Validate()
	if err == nil || !strings.Contains(err.Error(), `key "rules": 10000 rules: at most 1024 per Classifier`) {
		t.Fatalf("10,000 rules: %v, want the rule-count limit", err)
	}
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	c = &Config{Rules: portRules(maxRules)}
	if err := c.Validate(); err != nil {
		t.Fatalf("%d rules: %v", maxRules, err)
	}
	runtime.ReadMemStats(&after)
	alloc := after.TotalAlloc - before.TotalAlloc
	t.Logf("%d rules: %d MB allocated to compile", maxRules, alloc>>20)
	if alloc > 256<<20 {
		t.Fatalf("%d rules allocated %d MB to compile, want < 256 MB", maxRules, alloc>>20)
	}
}
