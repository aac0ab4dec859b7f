package conntrack

import "github.com/junction-dataplane/junction/elements"

// The manual pages of this package's elements, beside the code as the
// drivers keep theirs (forwarder elements TYPE prints them).

// conntrackManual is Conntrack's manual page (forwarder elements Conntrack).
var conntrackManual = elements.Doc{
	Synopsis: "Conntrack([capacity], [timeouts...])",
	Summary:  "tracks IPv4 and IPv6 flows per worker: TCP state machine, UDP and ICMP echo timeouts, bounded table; annotates each packet with its flow and state",
	Ports: "input 0: Ethernet frames with the network header at the L3 annotation (normally after CheckIPHeader).\n" +
		"output 0: tracked packets (ct state new, established or related) and packets Conntrack does not track " +
		"(neither IPv4 nor IPv6, or IPv6 neighbour discovery and MLD: ct state untracked), each with its connection-tracking annotation (packet.Ct) set.\n" +
		"output 1 (optional): invalid packets (ct state invalid); unconnected, they are dropped and counted as \"unconnected output 1\".",
	Keys: []elements.Key{
		{Name: "capacity", Type: "int", Default: "262144", Doc: "IPv4 flows per worker (128 bytes each, 16–32 of hash index and 4 of eviction order hint, 64 more with tcp_window); a full table evicts the oldest unassured flow or closing TCP connection, never another assured one. IPv6 flows have a table of their own, a quarter this size (at least 1024, or capacity if smaller; ~150 bytes each). " +
			"At most 2^30, and at most what memory holds: every worker's tables together (up to about 420 bytes a flow, FastTrack's flow cache counted) " +
			"within half the machine's memory (MemTotal, or the cgroup's or the address-space limit if lower); check and run refuse more, naming the largest capacity that fits " +
			"(a table beyond memory would end the process in the runtime's \"out of memory\")"},
		{Name: "timeouts", Type: "[]string", Variadic: true,
			Doc: "NAME=DURATION overrides of the idle timeouts (Go durations or Nd days). Names and Linux's defaults: " +
				"tcp_syn_sent=120s tcp_syn_recv=60s tcp_established=5d tcp_fin_wait=120s tcp_close_wait=60s " +
				"tcp_last_ack=30s tcp_time_wait=120s tcp_close=10s tcp_syn_sent2=120s udp=30s (unreplied) " +
				"udp_stream=120s (replied) icmp=30s generic=600s"},
		{Name: "tcp_window", Type: "bool", Default: "true",
			Doc: "track TCP sequence and acknowledgment numbers against each side's window, as Linux does: " +
				"segments outside the window are invalid (\"invalid: tcp window\"); 64 more bytes per flow. " +
				"false follows TCP on flags alone, as Linux's nf_conntrack_tcp_be_liberal"},
		{Name: "state_file", Type: "string", Default: "\"\"",
			Doc: "path prefix of files (PREFIX.w0, PREFIX.w1, ..., mode 0600) to which each worker's live flows, with their " +
				"NAT bindings and TCP states, are written when the forwarder stops and from which they are read back " +
				"(and removed) when it starts, so that a restart keeps every flow, including those whose next packet comes " +
				"from outside (a masqueraded client's download); only a graph with as many workers restores them; " +
				"a file that cannot be read is reported and the worker starts empty"},
	},
	Stats: "counters: \"reload: capacity shrunk\" (flows a reload to a smaller capacity could not keep: the oldest unassured first), " +
		"\"reload: moved in\" (flows a reload that changed the number of workers moved into this worker's table, their new owner's), " +
		"\"reload: workers changed: directions split\" (flows such a reload dropped because their two directions now hash to two workers and the steering cannot pin the reply: an ICMP echo through SNAT; a TCP or UDP flow's reply is pinned to its owner instead), " +
		"\"reload: workers changed: no room\" (flows it dropped because their new owner's table was full), \"new\" (flows created), \"related\" (ICMP and ICMPv6 errors about a tracked flow), \"untracked\" " +
		"(neither IPv4 nor IPv6; IPv6 neighbour discovery and MLD), \"entries\" (live flows, a gauge), \"evicted\" (unassured flows and closing TCP connections removed to admit new ones), " +
		"\"expired\"; invalid packets by cause: \"invalid: malformed\" (IPv6: also an extension-header chain longer than 8 or cut short), \"invalid: fragment\" (fragments, IPv4 or IPv6, are not " +
		"reassembled here: an IPReassembler before Conntrack makes IPv4 ones whole datagrams, an IP6Reassembler IPv6 ones; " +
		"an IPv6 atomic fragment, offset 0 and M clear, is tracked as the whole datagram it is, RFC 6946), \"invalid: tcp flags\" (a combination no TCP sends, e.g. SYN+FIN or none), \"invalid: tcp state\" " +
		"(a segment that does not fit the flow's state, e.g. a SYN/ACK with no SYN), \"invalid: tcp window\" (tcp_window: " +
		"a sequence number beyond the receiver's window, an acknowledgment of data not sent, or a reset before the " +
		"acknowledged point), \"invalid: icmp\" (ICMP that is " +
		"not echo, or an error quoting garbage or an unknown flow, or with a bad checksum); drop \"table full\" " +
		"(every entry assured, live and not a closing TCP connection: the new flow is refused, established ones keep working). With FastTrack's flow " +
		"cache: \"flow cache displaced\" (a direction compiled into a full place pushed another out: that one keeps " +
		"FastTrack's flow-table path) and \"flow cache refused\" (not cached: more than 8 distinct timeouts or 65,536 " +
		"distinct Ethernet headers in one generation).",
	Example: `"cls[1] -> CheckIPHeader -> ct :: Conntrack(65536, udp=20s) -> fw :: Classifier(ct established or ct related, ct new and dst port 22, -)"`,
	SeeAlso: "DNAT, SNAT, FastTrack, Classifier (ct new|established|related|invalid), forwarder show flows (the running table)",
	Text: "Each worker has its own table: flows must be steered so that both directions reach the same worker " +
		"(see SNAT and FastTrack for how NAT keeps that). A flow is keyed by its 5-tuple (ICMP echo: addresses " +
		"and identifier); the entry holds both directions' tuples, so a reply finds it with one lookup, and NAT " +
		"changes the reply tuple. The input device of each direction is recorded in the entry. TCP follows " +
		"Linux's state table and, with tcp_window, Linux's window tracking (tcp_in_window: the window scale " +
		"from the SYNs, SACK, old data sent again and very late ACKs passed without moving the state, resets " +
		"checked against the acknowledged point). A flow is picked up in the middle from an ACK " +
		"(nf_conntrack_tcp_loose) and then, its window scale unknown, followed on flags alone, as Linux does; " +
		"so is a flow whose packets went around the tracker (FastTrack, a device's fast path), as Linux " +
		"treats a flow it offloads. " +
		"A flow is assured once a reply was seen (TCP: and it is established); a full table evicts the oldest " +
		"evictable flow (O(1)): unassured flows, and TCP connections in FIN_WAIT, CLOSE_WAIT, LAST_ACK, TIME_WAIT " +
		"or CLOSE although assured (as Linux's early drop), in the order they became evictable; else an expired " +
		"assured one; and otherwise it refuses the new flow. IPv6 flows (TCP, UDP, ICMPv6 " +
		"echo, other protocols by address pair; ICMPv6 errors as related, their quote walked like the packet) are " +
		"tracked the same way in a table of their own (closing TCP connections evictable too), which NAT and FastTrack do not use: a packet's ct state is all " +
		"the rest of the graph sees of an IPv6 flow. Idle flows are " +
		"removed when a packet finds them expired and by an incremental sweep every tick. With FastTrack on the " +
		"worker, the table also keeps FastTrack's flow cache (one line per fast-tracked direction); the tracker, " +
		"eviction and the sweep fold the cache's hits into a flow (packets, bytes, timeout) before they look at it, " +
		"so its state and counters are the same as without the cache; and it lists for FastTrack each flow it finds " +
		"fast-trackable under FastTrack's after and policy (it keeps the packet count after is compared with), so " +
		"that FastTrack recognises a flow that is not fast-tracked from its cache alone.",
}
