package cttest

import (
	"encoding/binary"

	"github.com/google/gopacket"
	"github.com/google/gopacket/layers"
)

// Seg describes one TCP segment with the fields window tracking reads.
type Seg struct {
	Src, Dst     string
	Sport, Dport uint16
	Flags        uint8 // FIN, SYN, ...
	Seq, Ack     uint32
	Win          uint16
	Payload      int
	WScale       int  // the window scale option's shift; < 0: no option
	SackPerm     bool // the SACK-permitted option
	Timestamps   bool // a timestamps option (as Linux sends on every segment)
	Sack         [][2]uint32
}

// TCPSeg serializes s as Ethernet/IPv4/TCP with correct checksums.
func TCPSeg(s Seg) []byte {
	eth := &layers.Ethernet{SrcMAC: macA, DstMAC: macB, EthernetType: layers.EthernetTypeIPv4}
	ip := &layers.IPv4{Version: 4, IHL: 5, TTL: 64, Id: 0x1234, Protocol: layers.IPProtocolTCP, SrcIP: addr(s.Src), DstIP: addr(s.Dst)}
	t := &layers.TCP{SrcPort: layers.TCPPort(s.Sport), DstPort: layers.TCPPort(s.Dport), Seq: s.Seq, Ack: s.Ack, Window: s.Win,
		FIN: s.Flags&FIN != 0, SYN: s.Flags&SYN != 0, RST: s.Flags&RST != 0, PSH: s.Flags&PSH != 0, ACK: s.Flags&ACK != 0, URG: s.Flags&URG != 0}
	if s.Timestamps {
		t.Options = append(t.Options, layers.TCPOption{OptionType: layers.TCPOptionKindNop}, layers.TCPOption{OptionType: layers.TCPOptionKindNop},
			layers.TCPOption{OptionType: layers.TCPOptionKindTimestamps, OptionLength: 10, OptionData: make([]byte, 8)})
	}
	if s.SackPerm {
		t.Options = append(t.Options, layers.TCPOption{OptionType: layers.TCPOptionKindSACKPermitted, OptionLength: 2})
	}
	if s.WScale >= 0 {
		t.Options = append(t.Options, layers.TCPOption{OptionType: layers.TCPOptionKindNop},
			layers.TCPOption{OptionType: layers.TCPOptionKindWindowScale, OptionLength: 3, OptionData: []byte{byte(s.WScale)}})
	}
	if len(s.Sack) > 0 {
		d := make([]byte, 8*len(s.Sack))
		for i, b := range s.Sack {
			binary.BigEndian.PutUint32(d[8*i:], b[0])
			binary.BigEndian.PutUint32(d[8*i+4:], b[1])
		}
		t.Options = append(t.Options, layers.TCPOption{OptionType: layers.TCPOptionKindNop}, layers.TCPOption{OptionType: layers.TCPOptionKindNop},
			layers.TCPOption{OptionType: layers.TCPOptionKindSACK, OptionLength: uint8(2 + len(d)), OptionData: d})
	}
	t.SetNetworkLayerForChecksum(ip)
	pay := gopacket.Payload(make([]byte, s.Payload))
	buf := gopacket.NewSerializeBuffer()
	if err := gopacket.SerializeLayers(buf, gopacket.SerializeOptions{FixLengths: true, ComputeChecksums: true}, eth, ip, t, pay); err != nil {
		panic(err)
	}
	return append([]byte(nil), buf.Bytes()...)
}
