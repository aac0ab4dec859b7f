package devices

import "github.com/junction-dataplane/junction/elements"

// The manual pages of this package's elements, beside the code as the
// drivers keep theirs (forwarder elements TYPE prints them).

// fromDeviceManual is FromDevice's manual page (forwarder elements FromDevice).
var fromDeviceManual = elements.Doc{
	Synopsis: "FromDevice(DEVICE [, SPREAD, HOST_AFFINITY...])",
	Summary:  "receives batches from the RX queues of DEVICE that this worker serves",
	Ports: "no inputs; output 0: every received packet. RX queue i of the device is " +
		"served by worker i mod workers, so a worker may serve several queues (polled round " +
		"robin, one batch per poll) or none (then the instance is drained from the start).",
	Keys: append(deviceKey[:1:1], elements.Key{Name: "spread", Type: "string", Default: `"auto"`,
		Doc: "auto | on | off: hand every packet to the worker that owns its flow, by a symmetric flow " +
			"hash (both directions of a flow on one worker), whichever queue it arrived on. auto: when " +
			"the device has fewer RX queues than there are workers, and when the graph keeps per-flow " +
			"state per worker (Conntrack, FastTrack, Plugin) unless the device promises that its queues " +
			"already keep each flow on one worker (gen with split_flows); on: always; off: never (a " +
			"flow whose packets reach two workers then meets per-worker state that never saw it)"},
		elements.Key{Name: "host_affinity", Type: "[]string", Default: "none",
			Doc: "networks whose hosts each keep all their packets on one worker: a packet with an end in one of " +
				"them (an IPv4 address, an IPv6 address by its /64) is steered by that host, both directions alike, " +
				"instead of by its flow (with an end in two, to the lower of the two hosts' workers). For per-host " +
				"limits with several workers: a Policer keyed src/32 or dst/32 meters on each worker alone, and is " +
				"exact (share = \"each\") only when a host's flows all reach one worker. Applies to every " +
				"FromDevice of the graph that spreads (the graph has one steering table), to the flow an ICMP error " +
				"quotes, and to a DNAT'd reply as its original direction; a masqueraded flow's replies come home by " +
				"the outside port SNAT picks on the host's worker (ICMP echoes through a masquerading SNAT excepted: they are steered by their identifier both ways, their replies naming no host). Only with spreading (not with spread = \"off\"); " +
				"the busiest host is then one worker's load at most. A reload that changes it moves those hosts' " +
				"flows to other workers, whose Conntrack did not see them start"}),
	Stats: "packets and batches received (per worker): what this worker pushed into the graph, " +
		"its own queues' packets and those handed to it. Receive errors and ring drops are " +
		"the driver's counters. With spreading: counters \"handed off\" (packets this worker " +
		"received and passed to another worker), \"handed in\" (received from other " +
		"workers) and \"handoff waits\" (polls that left this worker's own queues unread " +
		"because a worker it feeds had no room for a batch: backpressure); drop reason " +
		"\"spread full\" (a packet that found no room all the same; should stay 0); " +
		"\"queue moves\" and \"queue move timeouts\" (flows held because the sending host moved " +
		"them to another RX queue; see Queue moves). The source is drained when every queue it serves " +
		"is (a pcap file read to its end, a gen device whose count is reached) and, with " +
		"spreading, when every worker that hands it packets is drained and its rings are empty.",
	Example: `"FromDevice(lan) -> cls :: Classifier(arp, ip, -)"`,
	SeeAlso: "ToDevice",
	Text: "Each received packet's InDevice and InQueue annotations are set to the device's " +
		"index and the queue it came from.\n\n" + sleepDoc + "\n\n" + spreadDoc + "\n\n" + orderDoc,
}

// toDeviceManual is ToDevice's manual page (forwarder elements ToDevice).
var toDeviceManual = elements.Doc{
	Synopsis: "ToDevice(DEVICE)",
	Summary:  "transmits every packet it receives on DEVICE",
	Ports:    "input 0: packets to send; no outputs.",
	Keys:     deviceKey,
	Stats: "the driver owns every packet handed to it: a full TX ring frees and counts the " +
		"packet in the driver's \"tx drops\" (never blocks the worker). Drop reason " +
		"\"not transmitted\" counts packets a misbehaving driver left in the batch (should stay 0).",
	Example: `"rt[0] -> ARPQuerier(lan) -> ToDevice(lan)"`,
	SeeAlso: "FromDevice",
}
