package packet

import "encoding/binary"

// EtherTypeQinQ is 802.1ad's service tag (QinQ's outer tag).
const EtherTypeQinQ = 0x88A8

// maxL3Tags is how many VLAN tags L3Offset looks past: 802.1ad stacks two
// (a service and a customer tag); a third is never a trunk's (VLANDecap
// drops it).
const maxL3Tags = 2

// L3Offset is where the network header of an Ethernet frame starts: 14,
// or past up to two VLAN tags (802.1Q, EtherType 0x8100, or 802.1ad,
// 0x88a8): 18 or 22, so that the EtherType at offset-2 is the one the
// tags carry. A frame with a third tag, or too short to hold the tags it
// announces and the EtherType after them, gets the offset after the tags
// it does hold in full (its EtherType is then still a tag's, which no IP
// reader takes). The receiving drivers set Packet.L3 with it: the flow
// hash that spreads a trunk's packets over workers, Conntrack and the
// Policer read the IP header a tag carries where it is.
func L3Offset(frame []byte) uint16 {
	if len(frame) >= EthernetLen && frame[12] != 0x81 && frame[12] != 0x88 {
		return EthernetLen // untagged: the common case, inlined
	}
	return l3Tagged(frame)
}

func l3Tagged(frame []byte) uint16 {
	off := EthernetLen
	for range maxL3Tags {
		if len(frame) < off+4 {
			break
		}
		t := binary.BigEndian.Uint16(frame[off-2:])
		if t != EtherTypeVLAN && t != EtherTypeQinQ {
			break
		}
		off += 4
	}
	return uint16(off)
}
