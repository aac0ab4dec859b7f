package ethernet

import "github.com/junction-dataplane/junction/elements"

// The manual pages of this package's elements, beside the code as the
// drivers keep theirs (forwarder elements TYPE prints them).

// etherRewriteManual is EtherRewrite's manual page (forwarder elements EtherRewrite).
var etherRewriteManual = elements.Doc{
	Synopsis: "EtherRewrite(SRC, DST)",
	Summary:  "writes static Ethernet source and destination addresses into every frame",
	Ports:    "input 0: Ethernet frames; output 0: the same frames with the new addresses (the EtherType and payload are untouched).",
	Keys: []elements.Key{
		{Name: "src", Type: "mac", Required: true, Doc: "source MAC written into every frame (usually the output device's)"},
		{Name: "dst", Type: "mac", Required: true, Doc: "destination MAC written into every frame (the next hop's)"},
	},
	Stats:   `drop reason "truncated": frames shorter than an Ethernet header (14 bytes).`,
	Example: `"rt[1] -> EtherRewrite(02:00:00:00:00:01, 52:54:00:12:34:56) -> ToDevice(wan)"`,
	SeeAlso: "ARPQuerier, which finds the destination MAC from the next-hop annotation",
}
