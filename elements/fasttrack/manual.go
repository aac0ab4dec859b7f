package fasttrack

import "github.com/junction-dataplane/junction/elements"

// fastTrackManual is FastTrack's manual page (forwarder elements FastTrack):
// the keys, the counters and how the flow cache and the offload work.
func fastTrackManual() elements.Doc {
	return elements.Doc{
		Synopsis: "FastTrack([after], [policy], [idle_timeout], [outputs], [offload], [no_cache])",
		Summary:  "sends packets of fast-tracked flows straight to their learned output with the slow path's rewrite applied in one step",
		Ports: "input 0: frames from the devices, before any classification.\n" +
			"output 0: the slow path (misses).\n" +
			"outputs 1..N: fast-tracked packets, rewritten, for FastTrackLearn's port 0..N-1 (connect each to the transmitter FastTrackLearn's output of the same number leads to).",
		Keys: []elements.Key{
			{Name: "after", Type: "int", Default: "2", Doc: "packets of a flow (both directions counted, as Conntrack counts them) that take the slow path before it is fast-tracked"},
			{Name: "policy", Type: "string", Default: `"either-direction"`,
				Doc: "either-direction: a direction is fast-tracked once the slow path has handled it (one-way flows engage); both-directions: only once a reply was seen (Linux flowtable behaviour)"},
			{Name: "idle_timeout", Type: "duration", Default: "0", Doc: "timeout a fast-path hit gives the flow; 0 keeps the tracker's timeout for the flow's state"},
			{Name: "outputs", Type: "int", Default: "2", Doc: "number of fast outputs (FastTrackLearn's ports)"},
			{Name: "offload", Type: "[]string",
				Doc: "devices with a fast path (driver = \"afxdp\" with fastpath = true, or driver = \"afpacket\" with fastpath = \"auto\" or \"tc\"), one per fast output in order (\"\" for none): " +
					"a flow direction that FastTrack handled once, arriving on and leaving by devices this key names, is handed to their " +
					"in-kernel fast path, which then applies the same rewrite and transmits without the graph"},
			{Name: "no_cache", Type: "bool", Default: "false",
				Doc: "true: every hit looks the flow up in the flow table, as before the flow cache (for comparison; without offload the cache is used)"},
		},
		Stats: "counters: \"fasttracked packets\", \"fasttracked bytes\" (IP bytes), \"hits\" (= fasttracked packets), " +
			"\"misses\" (packets sent to the slow path), \"entries\" (flows with a learned fast path, a gauge updated by FastTrackLearn), " +
			"\"cache compiles\" (flow directions compiled into the flow cache; without offload), " +
			"\"slow: longer than the mtu\" (packets longer than the smallest MTU of the graph's devices that report one, " +
			"afxdp and afpacket: sent to the slow path unlooked-up, also counted in misses, so that its CheckMTU answers them " +
			"with packet too big or fragmentation needed). " +
			"With offload: \"offloaded flows\" (directions in the kernel now, a gauge), \"offloaded packets\" (what the kernel " +
			"forwarded for them, also counted in fasttracked packets and bytes), \"offload ended\" (directions taken back: " +
			"flow ended, changed or timed out), \"offload full\" (the kernel's flow table was full: the direction stays in " +
			"FastTrack), \"not offloadable\" (arrives on or leaves by a device the offload key does not name), \"offloaded elsewhere\" (another " +
			"worker's FastTrack installed the same direction: a flow that reached two workers; the kernel counts it there), \"offload unavailable\" (the input's or the output's in-kernel fast path is off because " +
			"the kernel cannot run it, see forwarder show interfaces and forwarder features: the direction stays in FastTrack), \"offload errors\".",
		Example: `"FromDevice(wan) -> ft :: FastTrack(2, either-direction) -> cls :: Classifier(arp, ip, -)", "ft[1] -> ToDevice(lan)", "ft[2] -> ToDevice(wan)"`,
		SeeAlso: "FastTrackLearn, Conntrack, DNAT, SNAT",
		Text: "IPv6 flows (fast6.go) take a plainer path, looked at only among the misses and only once FastTrackLearn has " +
			"learned some IPv6 direction: an untagged IPv6 TCP (ESTABLISHED, ACK without SYN/FIN/RST), UDP or ICMPv6 echo " +
			"packet without extension headers, whose flow is in the worker's IPv6 table (Conntrack) under the same after, " +
			"policy and generation rules, gets the learned hop-limit decrement and Ethernet header (IPv6 is not translated, " +
			"so no checksum changes), is counted against its flow and goes to its learned output; no flow cache. With " +
			"offload, its TCP and UDP directions go to the kernel as IPv4's do (below; ICMPv6 stays here, counted as " +
			"\"not offloadable\").\n\n" +
			"A hit needs: an IPv4 TCP (ESTABLISHED, no SYN/FIN/RST), UDP or ICMP echo packet without options or " +
			"fragmentation, whose flow is live in the worker's Conntrack table, has been seen `after` packets, and has a " +
			"fast path learned for this direction under the current generation (the graph's conntrack.Generation: a route or NAT " +
			"change invalidates every entry), and a TTL above what the slow path subtracts. FastTrack then applies the " +
			"destination rewrite (DNAT, or un-SNAT), the TTL decrement, the source rewrite (SNAT, or un-DNAT) and the " +
			"Ethernet addresses in one step, each checksum patched once with the sum of all its changed words (RFC 1624; " +
			"the bytes are identical to the slow path's, which tests check on random traffic); lookups of a batch are " +
			"prefetched together (conntrack.Table.Warm) so that a table of 1M flows costs little more than a small one. " +
			"It counts the packet against the flow (packets, bytes) and refreshes its timeout. Everything else misses: " +
			"handshakes and closes, ICMP errors, invalid packets all take the slow path.\n\n" +
			"Flow cache (without the offload key): a direction is compiled into the worker's flow " +
			"cache when it becomes fast-trackable, one 64-byte line holding the arrival tuple as the frame's bytes, the rewritten addresses and ports in " +
			"frame byte order with both checksum deltas precomputed, the Ethernet header (by index), the output, the " +
			"packet's annotation and the hits not yet counted in the flow. Its later packets read that one line instead of " +
			"the flow table's bucket and two entry lines, and need no byte swap. The flow table stays the authority: " +
			"anything that may change a flow (a packet of it on the slow path, its deletion, eviction or expiry) first " +
			"folds the cached hits into it (packets, bytes, timeout) and drops the entry; the garbage collector folds " +
			"before it judges a flow idle; a new generation or an expired timeout makes the entry miss. A direction may " +
			"sit in either of two slots; inserting moves an occupant to its other slot if that is free, and otherwise " +
			"displaces the second slot's, which keeps the flow-table path. A batch whose packets all hit the cache for " +
			"one output is passed on whole.\n\n" +
			"Misses cost the cache probe alone: while the worker's FastTracks share one after, policy and idle_timeout, " +
			"the cache holds every direction that can be fast-tracked. Conntrack, which counts each packet of a flow " +
			"(the count after is compared with), lists every flow it finds fast-trackable and every flow whose cached " +
			"directions it dropped, and FastTrack compiles their learned directions before its next lookups; a direction " +
			"displaced from a full place, or refused by the cache, leaves a hint in its first slot. A packet the cache does " +
			"not hold is then a miss without a look at the flow table (unless its first slot has a hint), a batch of misses " +
			"goes to output 0 as it is, and while nothing is cached FastTrack does not even parse. A flow that never " +
			"engages (one-way traffic under both-directions, after never reached) thus costs FastTrack one cache line " +
			"per packet (nothing while no flow is cached) and Conntrack a test of the flow's count and flags. FastTracks with different keys on one worker look every miss up in the " +
			"flow table.\n\n" +
			"Offload (the offload key): a direction that takes FastTrack's path is queued, and the worker's next tick (within " +
			"a millisecond; no system call on the packet path) installs it in the devices' in-kernel fast path with the " +
			"same rewrite. Its packets then never reach the graph: each installed direction is visited every 100 ms, its " +
			"kernel counters folded into the flow (packets, bytes, timeout refresh, as a hit here would), and it is taken " +
			"out when its flow ended, left the established state, expired, was evicted or lost its learned path. A route, " +
			"NAT or neighbour change (a new generation) reaches the kernel at the next tick and stops every older entry at " +
			"once; the entries themselves are deleted as they are visited. A tick does at most 16 installs and 32 deletions " +
			"(about 2.4 µs of system call each, at most ~0.15 ms per tick), so floods of new flows and mass invalidations are worked off over many ticks " +
			"instead of stalling the worker; meanwhile FastTrack itself fast-tracks them. TCP handshakes and closes, fragments, packets " +
			"whose TTL would expire and ICMP errors still take the graph, as with FastTrack itself.\n\n" + graphDoc,
	}
}

// fastTrackLearnManual is FastTrackLearn's manual page (forwarder elements FastTrackLearn).
var fastTrackLearnManual = elements.Doc{
	Synopsis: "FastTrackLearn([outputs])",
	Summary:  "records, for each tracked packet leaving the slow path, its flow direction's rewrite and output for FastTrack",
	Ports:    "input i: packets about to be transmitted; output i: the same packets, unchanged. FastTrack's output i+1 must lead where output i leads.",
	Keys:     []elements.Key{{Name: "outputs", Type: "int", Default: "2", Doc: "number of ports"}},
	Stats: "counters: \"learned\" (directions given a fast path), \"not learnable\" (the packet's headers differ from " +
		"what the flow's NAT bindings produce, e.g. an element FastTrack cannot repeat changed them: the flow stays slow).",
	Example: `"rt[1] -> SNAT(203.0.113.1) -> ARPQuerier(wan) -> [1]ftl :: FastTrackLearn(2) ; ftl[1] -> ToDevice(wan)"`,
	SeeAlso: "FastTrack",
	Text:    graphDoc,
}
