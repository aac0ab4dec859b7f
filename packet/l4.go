package packet

import "encoding/binary"

// UDP header (RFC 768): src port, dst port, length, checksum.
const UDPLen = 8

// UDP is a view of a UDP header and payload.
type UDP []byte

// AsUDP returns the view if b holds at least a UDP header.
func AsUDP(b []byte) (UDP, bool) {
	if len(b) < UDPLen {
		return nil, false
	}
	return UDP(b), true
}

func (u UDP) SrcPort() uint16      { return binary.BigEndian.Uint16(u[0:]) }
func (u UDP) DstPort() uint16      { return binary.BigEndian.Uint16(u[2:]) }
func (u UDP) Length() int          { return int(binary.BigEndian.Uint16(u[4:])) }
func (u UDP) Checksum() uint16     { return binary.BigEndian.Uint16(u[6:]) }
func (u UDP) SetSrcPort(v uint16)  { binary.BigEndian.PutUint16(u[0:], v) }
func (u UDP) SetDstPort(v uint16)  { binary.BigEndian.PutUint16(u[2:], v) }
func (u UDP) SetLength(n int)      { binary.BigEndian.PutUint16(u[4:], uint16(n)) }
func (u UDP) SetChecksum(v uint16) { binary.BigEndian.PutUint16(u[6:], v) }

// TCP header (RFC 9293), fixed part.
const (
	TCPMinLen = 20
	TCPFin    = 0x01
	TCPSyn    = 0x02
	TCPRst    = 0x04
	TCPPsh    = 0x08
	TCPAck    = 0x10
	TCPUrg    = 0x20
)

// TCP is a view of a TCP header and payload.
type TCP []byte

// AsTCP returns the view if b holds at least a minimal TCP header.
func AsTCP(b []byte) (TCP, bool) {
	if len(b) < TCPMinLen {
		return nil, false
	}
	return TCP(b), true
}

func (t TCP) SrcPort() uint16      { return binary.BigEndian.Uint16(t[0:]) }
func (t TCP) DstPort() uint16      { return binary.BigEndian.Uint16(t[2:]) }
func (t TCP) Seq() uint32          { return binary.BigEndian.Uint32(t[4:]) }
func (t TCP) Ack() uint32          { return binary.BigEndian.Uint32(t[8:]) }
func (t TCP) DataOffset() int      { return int(t[12]>>4) * 4 }
func (t TCP) Flags() uint8         { return t[13] }
func (t TCP) Window() uint16       { return binary.BigEndian.Uint16(t[14:]) }
func (t TCP) Checksum() uint16     { return binary.BigEndian.Uint16(t[16:]) }
func (t TCP) SetSrcPort(v uint16)  { binary.BigEndian.PutUint16(t[0:], v) }
func (t TCP) SetDstPort(v uint16)  { binary.BigEndian.PutUint16(t[2:], v) }
func (t TCP) SetSeq(v uint32)      { binary.BigEndian.PutUint32(t[4:], v) }
func (t TCP) SetAck(v uint32)      { binary.BigEndian.PutUint32(t[8:], v) }
func (t TCP) SetDataOffset(n int)  { t[12] = byte(n/4) << 4 }
func (t TCP) SetFlags(f uint8)     { t[13] = f }
func (t TCP) SetWindow(v uint16)   { binary.BigEndian.PutUint16(t[14:], v) }
func (t TCP) SetChecksum(v uint16) { binary.BigEndian.PutUint16(t[16:], v) }

// ICMPv4 header (RFC 792): type, code, checksum, then 4 bytes that depend on
// the type (echo: identifier and sequence; errors: unused or MTU).
const (
	ICMPLen              = 8
	ICMPEchoReply        = 0
	ICMPDestUnreachable  = 3
	ICMPRedirect         = 5
	ICMPEchoRequest      = 8
	ICMPTimeExceeded     = 11
	ICMPParameterProblem = 12
)

// ICMP is a view of an ICMPv4 message.
type ICMP []byte

// AsICMP returns the view if b holds at least the 8-byte ICMP header.
func AsICMP(b []byte) (ICMP, bool) {
	if len(b) < ICMPLen {
		return nil, false
	}
	return ICMP(b), true
}

func (c ICMP) Type() uint8          { return c[0] }
func (c ICMP) Code() uint8          { return c[1] }
func (c ICMP) Checksum() uint16     { return binary.BigEndian.Uint16(c[2:]) }
func (c ICMP) Ident() uint16        { return binary.BigEndian.Uint16(c[4:]) }
func (c ICMP) Seq() uint16          { return binary.BigEndian.Uint16(c[6:]) }
func (c ICMP) Rest() uint32         { return binary.BigEndian.Uint32(c[4:]) }
func (c ICMP) SetType(v uint8)      { c[0] = v }
func (c ICMP) SetCode(v uint8)      { c[1] = v }
func (c ICMP) SetChecksum(v uint16) { binary.BigEndian.PutUint16(c[2:], v) }
func (c ICMP) SetRest(v uint32)     { binary.BigEndian.PutUint32(c[4:], v) }

// IsError reports whether the type is an ICMP error message (RFC 1812
// 4.3.2.7: no ICMP error is sent about one).
func (c ICMP) IsError() bool {
	switch c.Type() {
	case ICMPDestUnreachable, 4 /* source quench */, ICMPRedirect, ICMPTimeExceeded, ICMPParameterProblem:
		return true
	}
	return false
}
