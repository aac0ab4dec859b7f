package classifier

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/junction-dataplane/junction/elements"
)

var _ elements.Upstream = (*Config)(nil)

// NeedsUpstream: a "ct" rule reads the state Conntrack annotates; without
// a Conntrack before it every packet is untracked.
func (c *Config) NeedsUpstream() (string, string) {
	for i, r := range c.Rules {
		toks, err := lex(r)
		if err != nil {
			continue
		}
		for _, t := range toks {
			if t.kind == tWord && t.low == "ct" {
				return "Conntrack", "rule " + strconv.Itoa(i) + " tests the connection-tracking state (ct), which Conntrack annotates: without it every packet is untracked"
			}
		}
	}
	return "", ""
}

var _ elements.Warner = (*Config)(nil)

// Warnings: rules after a "-" (every packet) never match, so their
// outputs receive nothing.
func (c *Config) Warnings() []string {
	for i, r := range c.Rules {
		if strings.TrimSpace(r) == "-" && i < len(c.Rules)-1 {
			return []string{fmt.Sprintf("rule %d is \"-\" (every packet): the rules after it never match, outputs %d..%d receive nothing", i, i+1, len(c.Rules)-1)}
		}
	}
	return nil
}
