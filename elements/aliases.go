package elements

import (
	"sort"
	"strings"

	"github.com/junction-dataplane/junction/internal/suggest"
)

// aliases maps the names other routers and tools give an element (Click's,
// VPP's, iptables' and nftables' words) to Junction's type, for the "did
// you mean" of an unknown type. Keys are lower case.
var aliases = map[string]string{
	"drop":           "Discard",
	"dropper":        "Discard",
	"deny":           "Discard",
	"null":           "Discard",
	"sink":           "Discard",
	"decipttl":       "DecTTL",
	"dechoplimit6":   "DecHopLimit",
	"ipclassifier":   "Classifier",
	"ipfilter":       "Classifier",
	"filter":         "Classifier",
	"acl":            "Classifier",
	"staticiplookup": "IPLookup",
	"radixiplookup":  "IPLookup",
	"lineariplookup": "IPLookup",
	"directiplookup": "IPLookup",
	"fib":            "IPLookup",
	"route":          "IPLookup",
	"etherencap":     "EtherRewrite",
	"polldevice":     "FromDevice",
	"fromhost":       "FromDevice",
	"tohost":         "ToDevice",
	"queue":          "ToDevice",
	"masquerade":     "SNAT",
	"ct":             "Conntrack",
	"checkip6header": "CheckIP6Header",
	"flowoffload":    "FastTrack",
	"counter":        "Counter",
	"dnat":           "DNAT",
	"snat":           "SNAT",
}

// SuggestType returns the registered type a mistyped or foreign element
// type name most likely means: a known alias from another tool ("Drop" →
// "Discard", Click's "DecIPTTL" → "DecTTL"), else the nearest registered
// name within a plausible typo, else "".
func SuggestType(name string) string {
	if t, ok := aliases[strings.ToLower(name)]; ok && t != name {
		if _, reg := Lookup(t); reg {
			return t
		}
	}
	names := Names()
	sort.Strings(names)
	return suggest.Nearest(name, names)
}
