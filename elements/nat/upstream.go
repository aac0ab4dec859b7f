package nat

import "github.com/junction-dataplane/junction/elements"

var (
	_ elements.Upstream = (*SNATConfig)(nil)
	_ elements.Upstream = (*DNATConfig)(nil)
)

const needsConntrack = "it translates only the flows Conntrack tracks: without one every packet passes untranslated"

// NeedsUpstream: SNAT works on the connections Conntrack annotates.
func (c *SNATConfig) NeedsUpstream() (string, string) { return "Conntrack", needsConntrack }

// NeedsUpstream: DNAT works on the connections Conntrack annotates.
func (c *DNATConfig) NeedsUpstream() (string, string) { return "Conntrack", needsConntrack }
