package packet

import (
	"bytes"
	"testing"

	"github.com/google/gopacket"
	"github.com/google/gopacket/layers"
)

func TestUDPGopacket(t *testing.T) {
	for _, tt := range []struct {
		sport, dport uint16
		payload      int
	}{
		{1234, 53, 12}, {0, 0, 0}, {65535, 1, 1}, {4789, 4789, 1400},
	} {
		payload := payloadBytes(tt.payload)
		ip := &layers.IPv4{Version: 4, TTL: 64, Protocol: layers.IPProtocolUDP, SrcIP: ip4("10.0.0.1"), DstIP: ip4("10.0.0.2")}
		g := &layers.UDP{SrcPort: layers.UDPPort(tt.sport), DstPort: layers.UDPPort(tt.dport)}
		b := serialize(t, ip, g, gopacket.Payload(payload))
		u, ok := AsUDP(IPv4(b).Payload())
		if !ok {
			t.Fatal("AsUDP failed")
		}
		if u.SrcPort() != tt.sport || u.DstPort() != tt.dport || u.Length() != UDPLen+tt.payload || u.Checksum() != g.Checksum {
			t.Errorf("read %d -> %d len %d csum %#x, want %+v len %d csum %#x", u.SrcPort(), u.DstPort(), u.Length(), u.Checksum(), tt, UDPLen+tt.payload, g.Checksum)
		}

		w := bytes.Repeat([]byte{0x77}, UDPLen+len(payload))
		copy(w[UDPLen:], payload)
		v := UDP(w)
		v.SetSrcPort(tt.sport)
		v.SetDstPort(tt.dport)
		v.SetLength(len(w))
		v.SetChecksum(g.Checksum)
		var d layers.UDP
		if err := d.DecodeFromBytes(w, nopFeedback{}); err != nil {
			t.Fatal(err)
		}
		if uint16(d.SrcPort) != tt.sport || uint16(d.DstPort) != tt.dport || int(d.Length) != len(w) || d.Checksum != g.Checksum {
			t.Errorf("gopacket decoded %+v", d)
		}
		if !bytes.Equal(w, b[IPv4MinLen:]) {
			t.Errorf("setters wrote %x, gopacket %x", w, b[IPv4MinLen:])
		}
	}
}

func TestTCPGopacket(t *testing.T) {
	for _, tt := range []struct {
		sport, dport uint16
		seq, ack     uint32
		flags        uint8
		window       uint16
		options      []layers.TCPOption
		payload      int
	}{
		{40000, 80, 1, 0, TCPSyn, 65535, nil, 0},
		{443, 51515, 0xffffffff, 0x80000001, TCPSyn | TCPAck, 29200, nil, 0},
		{22, 2222, 12345678, 87654321, TCPAck | TCPPsh, 512, nil, 100},
		{1, 2, 3, 4, TCPFin | TCPAck, 0, nil, 1},
		{1, 2, 3, 4, TCPRst, 0, nil, 0},
		{5, 6, 7, 8, TCPUrg | TCPAck, 1, []layers.TCPOption{{OptionType: layers.TCPOptionKindMSS, OptionLength: 4, OptionData: []byte{5, 0xb4}}}, 7},
	} {
		payload := payloadBytes(tt.payload)
		ip := &layers.IPv4{Version: 4, TTL: 64, Protocol: layers.IPProtocolTCP, SrcIP: ip4("10.0.0.1"), DstIP: ip4("10.0.0.2")}
		g := &layers.TCP{SrcPort: layers.TCPPort(tt.sport), DstPort: layers.TCPPort(tt.dport), Seq: tt.seq, Ack: tt.ack,
			FIN: tt.flags&TCPFin != 0, SYN: tt.flags&TCPSyn != 0, RST: tt.flags&TCPRst != 0, PSH: tt.flags&TCPPsh != 0,
			ACK: tt.flags&TCPAck != 0, URG: tt.flags&TCPUrg != 0, Window: tt.window, Options: tt.options}
		b := serialize(t, ip, g, gopacket.Payload(payload))
		c, ok := AsTCP(IPv4(b).Payload())
		if !ok {
			t.Fatal("AsTCP failed")
		}
		if c.SrcPort() != tt.sport || c.DstPort() != tt.dport || c.Seq() != tt.seq || c.Ack() != tt.ack || c.Flags() != tt.flags ||
			c.Window() != tt.window || c.DataOffset() != int(g.DataOffset)*4 || c.Checksum() != g.Checksum {
			t.Errorf("read %d->%d seq %d ack %d flags %#x win %d off %d csum %#x, want %+v (off %d csum %#x)",
				c.SrcPort(), c.DstPort(), c.Seq(), c.Ack(), c.Flags(), c.Window(), c.DataOffset(), c.Checksum(), tt, g.DataOffset*4, g.Checksum)
		}
		if !bytes.Equal(c[c.DataOffset():], payload) {
			t.Errorf("payload after DataOffset differs")
		}

		w := bytes.Repeat([]byte{0x33}, TCPMinLen)
		v := TCP(w)
		v.SetSrcPort(tt.sport)
		v.SetDstPort(tt.dport)
		v.SetSeq(tt.seq)
		v.SetAck(tt.ack)
		v.SetDataOffset(TCPMinLen)
		v.SetFlags(tt.flags)
		v.SetWindow(tt.window)
		v.SetChecksum(0x1234)
		var d layers.TCP
		if err := d.DecodeFromBytes(w, nopFeedback{}); err != nil {
			t.Fatal(err)
		}
		if uint16(d.SrcPort) != tt.sport || uint16(d.DstPort) != tt.dport || d.Seq != tt.seq || d.Ack != tt.ack || d.DataOffset != 5 ||
			d.FIN != (tt.flags&TCPFin != 0) || d.SYN != (tt.flags&TCPSyn != 0) || d.RST != (tt.flags&TCPRst != 0) ||
			d.PSH != (tt.flags&TCPPsh != 0) || d.ACK != (tt.flags&TCPAck != 0) || d.URG != (tt.flags&TCPUrg != 0) ||
			d.ECE || d.CWR || d.NS || d.Window != tt.window || d.Checksum != 0x1234 {
			t.Errorf("gopacket decoded %+v", d)
		}
	}
}

func TestICMPGopacket(t *testing.T) {
	for _, tt := range []struct {
		typ, code uint8
		id, seq   uint16
		isError   bool
	}{
		{ICMPEchoRequest, 0, 0x1234, 1, false},
		{ICMPEchoReply, 0, 0xffff, 0xffff, false},
		{ICMPDestUnreachable, 4, 0, 1500, true}, // frag needed, MTU 1500
		{4, 0, 0, 0, true},                      // source quench
		{ICMPRedirect, 1, 0x0a00, 0x0001, true},
		{ICMPTimeExceeded, 0, 0, 0, true},
		{ICMPParameterProblem, 0, 0x1400, 0, true},
		{13, 0, 7, 8, false}, // timestamp
		{255, 255, 1, 2, false},
	} {
		payload := payloadBytes(28)
		g := &layers.ICMPv4{TypeCode: layers.CreateICMPv4TypeCode(tt.typ, tt.code), Id: tt.id, Seq: tt.seq}
		b := serialize(t, g, gopacket.Payload(payload))
		c, ok := AsICMP(b)
		if !ok {
			t.Fatal("AsICMP failed")
		}
		if c.Type() != tt.typ || c.Code() != tt.code || c.Ident() != tt.id || c.Seq() != tt.seq ||
			c.Rest() != uint32(tt.id)<<16|uint32(tt.seq) || c.Checksum() != g.Checksum || c.IsError() != tt.isError {
			t.Errorf("read type %d code %d id %d seq %d rest %#x csum %#x error %v, want %+v csum %#x",
				c.Type(), c.Code(), c.Ident(), c.Seq(), c.Rest(), c.Checksum(), c.IsError(), tt, g.Checksum)
		}

		w := make([]byte, ICMPLen+len(payload))
		copy(w[ICMPLen:], payload)
		v := ICMP(w)
		v.SetType(tt.typ)
		v.SetCode(tt.code)
		v.SetRest(uint32(tt.id)<<16 | uint32(tt.seq))
		v.SetChecksum(Checksum(w))
		if !bytes.Equal(w, b) {
			t.Errorf("setters + Checksum wrote %x, gopacket %x", w, b)
		}
		var d layers.ICMPv4
		if err := d.DecodeFromBytes(w, nopFeedback{}); err != nil {
			t.Fatal(err)
		}
		if d.TypeCode.Type() != tt.typ || d.TypeCode.Code() != tt.code || d.Id != tt.id || d.Seq != tt.seq {
			t.Errorf("gopacket decoded %+v", d)
		}
	}
}
