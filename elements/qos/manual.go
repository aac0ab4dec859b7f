package qos

import "github.com/junction-dataplane/junction/elements"

// The manual pages of this package's elements, beside the code as the
// drivers keep theirs (forwarder elements TYPE prints them).

// policerManual is Policer's manual page (forwarder elements Policer).
var policerManual = elements.Doc{
	Synopsis: "Policer(RATE [, BURST, EXCESS_BURST, PEAK_RATE, PEAK_BURST, KEY, ...])",
	Summary:  "meters packets with a single-rate (RFC 2697) or two-rate (RFC 2698) three-colour marker, per element, per flow or per address prefix, and passes, re-marks, drops or diverts each colour",
	Ports: "input 0: packets (IPv4 or IPv6 at the L3 offset; others are metered too, under one key of their own).\n" +
		"output 0: packets whose colour's action is pass or dscp (re-marked).\n" +
		"output N (N >= 1): packets whose colour's action is \"out N\"; there are as many outputs as the largest N asks.",
	Keys: []elements.Key{
		{Name: "rate", Type: "rate", Required: true, Doc: "the committed information rate (CIR), in bit/s of IP packets: \"20Mbit\", \"1.5Gbit\", \"800kbit\", \"20M\" (decimal units; \"bps\" means bits). 0 and rates beyond 400Gbit are refused"},
		{Name: "burst", Type: "size", Default: "rate × 10 ms, at least 3000", Doc: "the committed burst size (CBS), in bytes: \"1500\", \"64KB\", \"64KiB\". At least 1514 (a full-size frame, else such packets are never green); at most 256MiB"},
		{Name: "excess_burst", Type: "size", Default: "0", Doc: "the excess burst size (EBS) of the single-rate marker: tokens beyond a full committed bucket are kept up to it and colour packets yellow. 0: a two-colour policer (green or red). Not with peak_rate"},
		{Name: "peak_rate", Type: "rate", Default: "none", Doc: "the peak information rate (PIR): makes it a two-rate marker (RFC 2698): above the peak rate red, between the committed and the peak rate yellow. At least rate"},
		{Name: "peak_burst", Type: "size", Default: "burst", Doc: "the peak burst size (PBS) of the two-rate marker"},
		{Name: "key", Type: "string", Default: `"element"`, Doc: "what one meter covers: \"element\" (all packets), \"flow\" (the symmetric flow hash: both directions of a connection share one meter), \"src/N\" or \"dst/N\" (the source or destination address masked to N bits for IPv4, prefix6 bits for IPv6: \"src/32\" is one meter per inside host)"},
		{Name: "prefix6", Type: "int", Default: "64", Doc: "the IPv6 prefix length of src and dst keys (0..128; 64: one meter per IPv6 subnet, as a host usually holds many addresses of its /64)"},
		{Name: "capacity", Type: "int", Default: "4096", Doc: "meters per worker for keyed policers (16..1048576): a bounded table; when a key's set of four is taken, the meter refilled longest ago gives way (counted as \"evictions\" when it was not yet full)"},
		{Name: "green", Type: "string", Default: `"pass"`, Doc: "what happens to green packets: \"pass\" (output 0), \"drop\", \"dscp D\" (re-mark to D, a number or name such as ef, af12, cs1, then output 0), \"out N\" (output N), or \"dscp D out N\""},
		{Name: "yellow", Type: "string", Default: `"pass"`, Doc: "what happens to yellow packets (as green); RFC 2597 suggests re-marking them to a higher drop precedence, e.g. \"dscp af12\""},
		{Name: "red", Type: "string", Default: `"drop"`, Doc: "what happens to red packets (as green)"},
		{Name: "share", Type: "string", Default: `"split"`, Doc: "how the rates and bursts are divided between workers, which meter independently: \"split\" gives each worker rate/workers and burst/workers (at least 1514 bytes), so that what the keys let through in all never exceeds the rate (and the bursts); \"each\" gives every worker the whole rate, right when all packets of a key reach one worker (one worker; key \"flow\" always meters this way, since a flow stays on its worker)"},
		{Name: "color_aware", Type: "bool", Default: "false", Doc: "meter colour-aware (RFC 2697 and RFC 2698, the colour-aware mode): a packet's colour so far comes from its DSCP's drop precedence (RFC 2597: AFx1 green, AFx2 yellow, AFx3 red; every other code point, and a non-IP frame, green), and a packet is never given a better colour than it came with; false: colour-blind"},
	},
	Stats: "counters \"green\", \"yellow\", \"red\": packets of each colour; \"remarked\": packets whose DSCP was rewritten; \"not ip\": packets a dscp action could not re-mark (passed unchanged); \"evictions\": keyed meters given up before they were full. " +
		"Drop reasons \"policed green\", \"policed yellow\", \"policed red\": packets of a colour whose action is drop.",
	Example: `"cls[1] -> Policer(10Mbit, 64KB) -> rt"` + "\n" +
		`"lcls[2] -> CheckIPHeader -> up -> DecTTL -> rt" with [elements.up]: type = "Policer", rate = "20Mbit", burst = "250KB", key = "src/32" (each inside host at most 20 Mbit/s)`,
	SeeAlso: "Shaper, SetDSCP, docs/qos.md",
	Text: "A single-rate three-colour marker (RFC 2697) has a committed bucket of burst bytes and an excess bucket of excess_burst bytes, both refilled at rate; a two-rate one (RFC 2698, peak_rate set) has a committed bucket refilled at rate and a peak bucket refilled at peak_rate. Both start full. Metering is colour-blind, or colour-aware with color_aware. " +
		"A packet costs its bytes from the IP header on. Token arithmetic is exact (integer credits, no rounding), and the clock is read once per batch. " +
		"Policing drops what exceeds the rate at once, which TCP reads as loss: a TCP flow policed below its rate may settle well below it, where a Shaper, which queues the excess, keeps it at the rate (docs/qos.md shows both measured). " +
		"A rate (or peak_rate) beyond the summed link speeds of the devices whose packets reach the element never limits anything: forwarder check and forwarder run warn about it, located at the element and naming the key and that ceiling, where the kernel reports the speed of every such device (ethtool's Speed: a NIC with its link up; a veth reports 10 Gbit/s; virtio and tun devices report none, and then nothing is said).",
}

// setDSCPManual is SetDSCP's manual page (forwarder elements SetDSCP).
var setDSCPManual = elements.Doc{
	Synopsis: "SetDSCP(DSCP)",
	Summary:  "re-marks the DSCP of IPv4 (checksum patched) and IPv6 packets, keeping their ECN bits",
	Ports:    "input 0: packets (IPv4 or IPv6 at the L3 offset).\noutput 0: the same packets, IP ones re-marked; others unchanged.",
	Keys: []elements.Key{
		{Name: "dscp", Type: "dscp", Required: true, Doc: "the code point: 0..63 or a name (ef, va, cs0..cs7, af11..af43, be)"},
	},
	Stats:   "counters \"remarked\": IP packets re-marked; \"not ip\": packets passed unchanged (not IPv4 or IPv6, or too short).",
	Example: `"cls[0] -> SetDSCP(ef) -> up" (a Classifier rule picks the VoIP traffic; a Shaper with priority = ["ef"] sends it first)`,
	SeeAlso: "Shaper, Policer",
	Text:    "The IPv4 header checksum is updated incrementally (RFC 1624), so a header with a wrong checksum stays wrong. It classifies traffic for a Shaper's priority bands by what a Classifier can match (ports, hosts), or marks a class's packets for the next hop.",
}

// shaperManual is Shaper's manual page (forwarder elements Shaper).
var shaperManual = elements.Doc{
	Synopsis: "Shaper(RATE [, BURST, QUEUE, SHARE, PRIORITY...])",
	Summary:  "a rate-limited queue with a burst and strict-priority bands by DSCP: packets beyond the rate wait, and leave when their time comes",
	Ports: "input 0: packets (IPv4 or IPv6 at the L3 offset; others are shaped too, in the last band).\n" +
		"output 0: the same packets, no faster than rate (after a burst), highest band first.",
	Keys: []elements.Key{
		{Name: "rate", Type: "rate", Required: true, Doc: "the rate, in bit/s of IP packets: \"50Mbit\", \"1.5Gbit\", \"800kbit\", \"50M\" (decimal units; \"bps\" means bits). 0 and rates beyond 400Gbit are refused"},
		{Name: "burst", Type: "size", Default: "rate × 2 ms, at least 4000", Doc: "the bucket, in bytes: how much may leave back to back after a quiet period (\"64KB\", \"64KiB\", \"9000\"). At least 1920 (the largest frame a packet buffer holds, which would otherwise never leave); at most 256MiB"},
		{Name: "queue", Type: "int", Default: "512", Doc: "packets each band holds waiting (1..65536); a packet that finds its band full is dropped (\"queue full\"). Held packets are the receiving device's buffers: keep it well below the device's ring"},
		{Name: "share", Type: "string", Default: `"split"`, Doc: "how the rate and burst are divided between workers, each of which has its own queue: \"split\" gives each worker rate/workers (in all never more than rate), \"each\" gives each the whole rate (right with one worker, or when the traffic to shape reaches one worker)"},
		{Name: "priority", Type: "[]string", Default: "none", Variadic: true, Doc: "the bands in front of the default one, highest first, each a space-separated list of DSCPs (numbers or names: ef, va, cs0..cs7, af11..af43, be): [\"ef\"] sends EF packets (VoIP) ahead of everything else, [\"ef\", \"af41 af42\"] adds a second band. Up to 7 bands; packets of a DSCP not listed, and non-IP frames, go to the last band. A band is served only when every band above it is empty (strict priority)"},
		{Name: "aqm", Type: "string", Default: `"codel"`, Doc: "the queue management: \"codel\" (RFC 8289: a packet about to leave after its band's sojourn time has stayed above target for an interval is dropped, or marked CE, and the next one interval/sqrt(count) later) or \"off\" (drop tail only: what finds its band full is dropped)"},
		{Name: "target", Type: "duration", Default: `"5ms"`, Doc: "CoDel's target: the sojourn time a band may keep standing (more than 0, less than interval; RFC 8289: 5-10% of the interval)"},
		{Name: "interval", Type: "duration", Default: `"100ms"`, Doc: "CoDel's interval (1ms..10s): how long the sojourn time must stay above target before a drop, and the first gap between drops; about the round-trip time of the paths through the shaper"},
		{Name: "ecn", Type: "bool", Default: "true", Doc: "mark ECN-capable packets (IPv4 and IPv6 ECT(0), ECT(1)) Congestion Experienced (RFC 3168; the IPv4 checksum patched) instead of dropping them; false: drop them as well"},
	},
	Stats: "counters \"delayed\": packets that waited in a queue (the others left at once); \"sent\": packets sent; \"ce marked\": packets CoDel marked Congestion Experienced. " +
		"Drop reasons \"queue full\": a packet that found its band full; \"codel\": a packet CoDel dropped as it was about to leave; \"shaper stopped\": packets still queued when the graph stopped or a reload removed the element.",
	Example: `"rt[1] -> up :: Shaper(50Mbit) -> ARPQuerier(wan) -> ToDevice(wan)"` + "\n" +
		`"rt[1] -> uplink -> waq -> ToDevice(wan)" with [elements.uplink]: type = "Shaper", rate = "20Mbit", priority = ["ef"] (VoIP first)`,
	SeeAlso: "Policer, SetDSCP, docs/qos.md",
	Text: "A token bucket of burst bytes refilled at rate; a packet leaves when the bucket holds its size (its bytes from the IP header on) and the bands above it are empty. " +
		"What cannot leave waits in its band's queue; the worker's loop releases it at its departure time (the element is an elements.Waker: an idle worker sleeps until the earliest departure instead of polling for it, and a busy one releases packets between batches). " +
		"A wake-up that comes late (a worker waiting for its CPU on a loaded machine) costs no rate: while packets wait, the bucket keeps up to 200 ms of the rate beyond the burst, and what the lateness delayed leaves at once, back to back (a burst the next hop must absorb: it happens only when the worker did not get its CPU in time); the burst bounds the bucket again once the queue is empty. " +
		"Unlike a Policer, a Shaper delays rather than drops what exceeds the rate, so TCP keeps its rate through it (docs/qos.md). " +
		"Each band's queue is managed by CoDel (RFC 8289) unless aqm = \"off\": a packet's sojourn time (from its arrival to its departure) is read as it is about to leave; once a band's has stayed above target for a whole interval, the queue is standing rather than a burst passing through, and a packet is dropped (an ECN-capable one marked CE instead) and the next one interval/sqrt(count) later, until the sojourn time falls below target (a band holding no more than one packet's worth is never judged). " +
		"A TCP sender then slows down after one loss or mark, where drop tail lets the queue fill during its slow start and loses a whole burst at once (docs/qos.md, Queue management). The state and the timestamps are kept per band (no allocation). " +
		"A rate beyond the summed link speeds of the devices whose packets reach the element never queues anything: forwarder check and run warn about it, as about a Policer's.",
}
