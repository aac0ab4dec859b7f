package vlan

import "github.com/junction-dataplane/junction/elements"

// The manual pages of this package's elements (forwarder elements TYPE).

var decapManual = elements.Doc{
	Synopsis: "VLANDecap()",
	Summary:  "takes the outermost 802.1Q or 802.1ad tag off each frame",
	Text: `The frame's outermost tag (EtherType 0x8100, 802.1Q, or 0x88a8, 802.1ad) is removed: the addresses move 4 bytes forward and the frame continues with the EtherType the tag carried, so that the elements after it see an ordinary frame (an 802.1ad frame keeps its inner 802.1Q tag: a second VLANDecap, or a Classifier "vlan N" rule, reads it). Put a Classifier with "vlan N" rules before it, on the trunk, to choose the VLAN: VLANDecap does not look at the id, except that 4095 (reserved) is dropped. A priority-tagged frame (id 0) is decapsulated like any other: 802.1Q says it belongs to the port's untagged traffic.

Frames with three or more stacked tags are dropped: 802.1ad stacks two (a service and a customer tag), and a third is what a VLAN-hopping attack sends, never what a trunk carries. The frame's L3 annotation is set to where its network header is now: 14, or 18 past the inner tag of an 802.1ad frame.`,
	Ports: "input 0: tagged Ethernet frames; output 0: the same frames without their outermost tag.",
	Stats: `drop reasons: "untagged" (the EtherType is not 0x8100 or 0x88a8), "truncated" (shorter than the tag and the EtherType after it, 18 bytes; 22 for two tags), "reserved vlan" (id 4095), "too many tags" (a third tag after the second).`,
	Example: `"FromDevice(lan) -> trunk :: Classifier(vlan 10, vlan 20, -)",
"trunk[0] -> VLANDecap -> lan10 :: Classifier(arp, ip, -)"`,
	SeeAlso: "VLANEncap; Classifier (vlan N); docs/vlan.md",
}

var encapManual = elements.Doc{
	Synopsis: "VLANEncap(VLAN [, PRIORITY, TPID])",
	Summary:  "puts an 802.1Q (or 802.1ad) tag with a fixed VLAN id on each frame",
	Text: `Each frame gets a tag after its addresses: the addresses move 4 bytes back into the frame's headroom and the tag (TPID, then the priority code point and VLAN id) is written where they were. Put it last before the trunk's ToDevice, after the neighbour lookup (ARPQuerier, NDPQuerier) and FastTrackLearn, so that everything before it works on untagged frames.

The tagged frame is 4 bytes longer: the afxdp and afpacket drivers accept a frame of the interface's MTU plus its Ethernet header and one tag, so one VLANEncap keeps the IP MTU of the link; a second (802.1ad over 802.1Q) needs an MTU 4 bytes larger on the trunk, or a CheckMTU/IPFragmenter 4 bytes smaller before it. A frame that already carries two tags is dropped rather than given a third. The frame's L3 annotation grows by 4: it still points at the network header.`,
	Ports: "input 0: Ethernet frames; output 0: the same frames tagged.",
	Keys: []elements.Key{
		{Name: "vlan", Type: "int", Required: true, Doc: "VLAN id, 1-4094 (0 is a priority tag without a VLAN and 4095 is reserved: both are errors)"},
		{Name: "priority", Type: "int", Default: "0", Doc: "802.1p priority code point, 0-7"},
		{Name: "tpid", Type: "string", Default: `"802.1q"`, Doc: `the tag's EtherType: "802.1q" (0x8100) or "802.1ad" (0x88a8, QinQ's service tag)`},
	},
	Stats:   `drop reasons: "truncated" (shorter than an Ethernet header, 14 bytes), "too many tags" (already two tags), "no headroom" (fewer than 4 bytes before the frame in its buffer; packets from the drivers and pools always have them).`,
	Example: `"lq10 :: ARPQuerier(lan) -> VLANEncap(10) -> ToDevice(lan)"`,
	SeeAlso: "VLANDecap; docs/vlan.md",
}
