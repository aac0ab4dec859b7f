package standard

import (
	"strconv"

	"github.com/junction-dataplane/junction/elements"
)

// The manual pages of this package's elements, beside the code as the
// drivers keep theirs (forwarder elements TYPE prints them).

// counterManual is Counter's manual page (forwarder elements Counter).
var counterManual = elements.Doc{
	Synopsis: "Counter",
	Summary:  "counts packets and bytes and passes them on",
	Ports:    "input 0: any packets; output 0: the same batch, unchanged.",
	Stats:    `counters "packets" and "bytes" (frame bytes, Ethernet header included).`,
	Example:  `"FromDevice(lan) -> Counter -> Discard"`,
	SeeAlso:  "Print",
}

// discardManual is Discard's manual page (forwarder elements Discard).
var discardManual = elements.Doc{
	Synopsis: "Discard  or  Discard(REASON)",
	Summary:  "frees every packet it receives, counted as consumed (by design, not a drop)",
	Ports:    "input 0: any packets; no outputs.",
	Keys: []elements.Key{
		{Name: "reason", Type: "string", Default: strconv.Quote(DefaultDiscardReason),
			Doc: "the name its packets are counted under (forwarder show errors -all, the exit " +
				"table's counters, the stats endpoint's junction_element_consumed_total{reason}): " +
				"say why this branch ends here, e.g. Discard(firewall), Discard(not ip). " +
				"1.." + strconv.Itoa(maxReasonLen) + " printable characters"},
	},
	Stats: `consumption reason REASON ("discarded" by default): every packet. What a Discard ` +
		`takes is consumed, not dropped: the graph ends that branch on purpose, so it is left ` +
		`out of the drops (forwarder show errors, the exit table's drops column and total, ` +
		`junction_drops_total) and counted in the consumed column and total ` +
		`(junction_consumed_total). To count a branch's packets as losses, end it in an ` +
		`element that drops them for a reason instead.`,
	Example: `"cls[2] -> Discard"` + "\n" + `"fw[1] -> Discard(firewall)"`,
	SeeAlso: "Counter, forwarder show errors",
}

// printManual is Print's manual page (forwarder elements Print).
var printManual = elements.Doc{
	Synopsis: "Print(LABEL)",
	Summary:  "writes one line per packet to stderr and passes the packets on",
	Ports:    "input 0: any packets; output 0: the same batch, unchanged.",
	Keys: []elements.Key{
		{Name: "label", Type: "string", Default: `""`, Doc: "text in front of each line"},
		{Name: "maxlength", Type: "int", Default: "24", Doc: "bytes of each frame shown in hex (-1: all of it)"},
		{Name: "contents", Type: "bool", Default: "true", Doc: "show the bytes; false prints the length only"},
	},
	Stats: "none. A line reads `LABEL:   64 | 00112233 44556677 ...`: the frame length, then " +
		"up to maxlength bytes in groups of four, then \"...\" when the frame is longer. " +
		"Lines of one batch are written with one write.",
	Example: `"cls[2] -> Print(unknown) -> Discard"`,
	SeeAlso: "Counter",
	Text:    "A debugging element: it costs a write system call per batch.",
}

// teeManual is Tee's manual page (forwarder elements Tee).
var teeManual = elements.Doc{
	Synopsis: "Tee(N)",
	Summary:  "sends each packet to output 0 and a copy of it to each of outputs 1..N-1",
	Ports: "input 0: any packets; output 0: the original packets; outputs 1..N-1: copies " +
		"(frame and annotations) in buffers from the worker's pool. The copies are made " +
		"before anything is pushed, so no output sees another's changes.",
	Keys: []elements.Key{{Name: "n", Type: "int", Default: "2", Doc: "number of outputs, 1..16"}},
	Stats: `drop reason "no buffer": a copy that could not be made because the worker's pool ` +
		`was empty (that output misses the packet; the others still get it).`,
	Example: `"FromDevice(lan) -> t :: Tee(2)", "t[0] -> ToDevice(wan)", "t[1] -> Print(mirror) -> Discard"`,
}
