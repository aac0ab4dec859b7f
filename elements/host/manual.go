package host

import "github.com/junction-dataplane/junction/elements"

// The manual pages of this package's elements, beside the code as the
// drivers keep theirs (forwarder elements TYPE prints them).

// kernelNeighborsManual is KernelNeighbors's manual page (forwarder elements KernelNeighbors).
var kernelNeighborsManual = elements.Doc{
	Synopsis: "KernelNeighbors(INTERFACE, DEVICE, FAMILY)",
	Summary:  "mirrors the kernel's neighbour table of a twin interface into an ARPQuerier or NDPQuerier",
	Ports: "input 0: the frames the querier learns from (ARP frames, or neighbour solicitations and advertisements), " +
		"passed on unchanged to output 0; output 0: those, and a frame made for each neighbour the kernel holds " +
		"REACHABLE, PERMANENT or NOARP on INTERFACE: an ARP request (ipv4) or a neighbour solicitation with its " +
		"link-layer address (ipv6) from that neighbour for DEVICE's address, which the querier (input 1) learns " +
		"as it would the neighbour's own. Connect it in front of the querier's input 1.",
	Keys: []elements.Key{
		{Name: "interface", Type: "string", Required: true, Doc: `the kernel interface whose neighbours are mirrored: the port's twin (tap driver), e.g. "wan0h"`},
		{Name: "device", Type: "device", Required: true, Doc: "the graph device the neighbours are on (its MAC and addresses address the frames)"},
		{Name: "family", Type: "string", Default: `"ipv4"`, Doc: `"ipv4" (ARP, for ARPQuerier) or "ipv6" (neighbour solicitations, for NDPQuerier)`},
		{Name: "refresh", Type: "duration", Default: `"10s"`, Doc: "how often the whole table is read again (permanent entries change no more, but the querier's entries age: keep it below the querier's timeout)"},
	},
	Stats: `counters "mirrored" (frames made for the kernel's neighbours), "netlink errors" (reads or requests that failed, ` +
		`or messages cut short), "no buffer" (a frame not made: the worker's pool was empty; the next change or refresh makes it).`,
	Example: `"warpr[0] -> KernelNeighbors(wan0h, wan) -> [1]waq", "wnd[0] -> KernelNeighbors(wan0h, wan, ipv6) -> [1]wnq"`,
	SeeAlso: "tap, HostPunt, ARPQuerier, NDPQuerier",
	Text: "Why: the graph's querier and the kernel learn neighbours from the same frames when the twin gets copies of " +
		"ARP and neighbour discovery (bgp-router.toml), but entries the kernel gets otherwise (an operator's " +
		"`ip neigh add ... permanent`, a daemon's, or a frame the policer kept from one side) would not reach the " +
		"graph. This mirrors the kernel's table into the querier, as VPP's linux-nl plugin does, through the " +
		"querier's own learning rules (on-link senders only, at most its learn_rate new entries a second): the " +
		"frames stand for the neighbour resolving the router, which is what makes a querier create an entry.\n\n" +
		"Only the first worker's instance listens (a netlink socket subscribed to neighbour changes, read without " +
		"blocking at each tick, and the table dumped at start and every refresh); the others pass frames on. Entries " +
		"the kernel marks STALE, FAILED or INCOMPLETE, and deletions, are not mirrored: the querier ages and " +
		"re-resolves its own.",
}

// hostPuntManual is HostPunt's manual page (forwarder elements HostPunt).
var hostPuntManual = elements.Doc{
	Synopsis: "HostPunt(DEVICE, ...)",
	Summary:  "polices the traffic for the router's own stack per class and sends it towards the twin of the port it came in on",
	Ports: "input 0: Ethernet frames (network header at the L3 annotation) for the router itself that the graph " +
		"does not consume: what ICMPPingResponder passes on its output 1, copies of ARP and neighbour discovery " +
		"(Tee), link-local multicast, DHCP. output i: the packets that came in on the i-th device, for " +
		"ToDevice(its twin) (a tap device); unchanged.",
	Keys: []elements.Key{
		{Name: "devices", Type: "device", Variadic: true,
			Doc: "the forwarded ports, in output order"},
		{Name: "neighbor_rate", Type: "int", Default: "2000",
			Doc: "packets/s of ARP and IPv6 neighbour discovery (router and neighbour solicitations and advertisements, redirects); 0 punts none"},
		{Name: "routing_rate", Type: "int", Default: "20000",
			Doc: "packets/s of routing protocols: BGP (TCP 179), BFD (UDP 3784, 3785, 4784), LDP (646), RIP and RIPng (UDP 520, 521), OSPF (89), VRRP (112), PIM (103), IGMP (2), MLD (ICMPv6 130-132, 143); 0 punts none"},
		{Name: "icmp_rate", Type: "int", Default: "1000",
			Doc: "packets/s of the other ICMP and ICMPv6; 0 punts none"},
		{Name: "other_rate", Type: "int", Default: "5000",
			Doc: "packets/s of everything else (SSH, DHCP, DNS, HTTP, routing protocols from outside peers); 0 punts none"},
		{Name: "burst", Type: "duration", Default: `"100ms"`,
			Doc: "how much of a rate may come at once: a class's bucket holds rate × burst packets (at least 16)"},
		{Name: "peers", Type: "[]string",
			Doc: `addresses or prefixes routing-protocol packets must come from to be policed as routing (e.g. the BGP neighbours); from any other source they are "other". Empty: any source`},
	},
	Stats: `counters "punted neighbor", "punted routing", "punted icmp", "punted other"; drop reasons ` +
		`"neighbor over rate", "routing over rate", "icmp over rate", "other over rate" (the policer's drops, ` +
		`by class), "other device" (a packet that came in on none of the devices).`,
	Example: `"wme[1] -> hp :: HostPunt(lan, wan)", "hp[0] -> ToDevice(lanh)", "hp[1] -> ToDevice(wanh)"`,
	SeeAlso: "tap (the driver of the twins), Tee, ICMPPingResponder",
	Text: "Why: a router's daemons must see their packets (BGP, BFD, SSH, DHCP), and the kernel's path to them " +
		"costs a system call per packet, so without a bound a flood at the router (a SYN flood to port 179, " +
		"an ARP storm) would spend the workers' time in the kernel and fill the daemons' sockets. Each class " +
		"has its own token bucket, so a flood of one class does not starve another: an ARP storm leaves BGP " +
		"alone, and with peers set a SYN flood from spoofed sources to port 179 is policed as \"other\" while " +
		"the real neighbours' BGP keeps its class (Cisco's CoPP and Juniper's lo0 filter do the same).\n\n" +
		"Each worker has its own buckets, with the rate divided evenly between the workers (rounded up), so " +
		"policing takes no lock and no atomic operation; the clock is read once per batch. A flow that " +
		"all lands on one worker gets that worker's share: a BGP session on a two-worker router gets up to half " +
		"of routing_rate, which the default leaves far above what a full table transfer sends.",
}
