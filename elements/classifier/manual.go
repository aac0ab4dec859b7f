package classifier

import "github.com/junction-dataplane/junction/elements"

// The manual pages of this package's elements, beside the code as the
// drivers keep theirs (forwarder elements TYPE prints them).

// classifierManual is Classifier's manual page (forwarder elements Classifier).
var classifierManual = elements.Doc{
	Synopsis: "Classifier(RULE, ...)",
	Summary:  "sends each packet to the output of the first rule it matches",
	Ports: "input 0: Ethernet frames (network header at the L3 annotation). Output i " +
		"(one per rule, numbered from 0): the packets whose first matching rule is rule i. " +
		"A packet that matches no rule is dropped and counted as \"no match\".",
	Keys: []elements.Key{{
		Name: "rules", Type: "[]string", Required: true, Variadic: true,
		Doc: "one rule per output port, in the language below; \"-\" matches every packet",
	}},
	Stats: "drop reason \"no match\": packets that no rule matched.",
	Example: `"FromDevice(lan) -> cls :: Classifier(arp, ip, -)"` + "\n" +
		`[elements.fw]` + "\n" +
		`type  = "Classifier"` + "\n" +
		`rules = ["arp request", "tcp and dst port 22 and src net 10.0.0.0/8", "udp and (dst port 53 or dst port 123)", "ip6 and icmp", "not ip and not ip6"]`,
	SeeAlso: "CheckIPHeader, IPLookup",
	Text:    languageDoc,
}
