package packet

import (
	"encoding/binary"
	"net/netip"
)

// ARP for IPv4 over Ethernet (RFC 826):
//
//	0      2      4    5    6      8          14         18         24         28
//	+------+------+----+----+------+----------+----------+----------+----------+
//	| htype| ptype|hlen|plen|  op  |  sha     |  spa     |  tha     |  tpa     |
//	+------+------+----+----+------+----------+----------+----------+----------+
const (
	ARPLen     = 28
	arpHType   = 0
	arpPType   = 2
	arpHLen    = 4
	arpPLen    = 5
	arpOp      = 6
	arpSHA     = 8
	arpSPA     = 14
	arpTHA     = 18
	arpTPA     = 24
	ARPRequest = 1
	ARPReply   = 2
)

// ARP is a view of an Ethernet/IPv4 ARP packet.
type ARP []byte

// AsARP returns the view and whether b holds a well-formed Ethernet/IPv4 ARP
// header (hardware type 1, protocol 0x0800, lengths 6 and 4).
func AsARP(b []byte) (ARP, bool) {
	if len(b) < ARPLen {
		return nil, false
	}
	a := ARP(b)
	if binary.BigEndian.Uint16(a[arpHType:]) != 1 || binary.BigEndian.Uint16(a[arpPType:]) != EtherTypeIPv4 ||
		a[arpHLen] != 6 || a[arpPLen] != 4 {
		return nil, false
	}
	return a, true
}

func (a ARP) Op() uint16                { return binary.BigEndian.Uint16(a[arpOp:]) }
func (a ARP) SetOp(op uint16)           { binary.BigEndian.PutUint16(a[arpOp:], op) }
func (a ARP) SenderMAC() (m MAC)        { copy(m[:], a[arpSHA:arpSHA+6]); return }
func (a ARP) TargetMAC() (m MAC)        { copy(m[:], a[arpTHA:arpTHA+6]); return }
func (a ARP) SenderIP() netip.Addr      { return netip.AddrFrom4([4]byte(a[arpSPA : arpSPA+4])) }
func (a ARP) TargetIP() netip.Addr      { return netip.AddrFrom4([4]byte(a[arpTPA : arpTPA+4])) }
func (a ARP) SetSenderMAC(m MAC)        { copy(a[arpSHA:arpSHA+6], m[:]) }
func (a ARP) SetTargetMAC(m MAC)        { copy(a[arpTHA:arpTHA+6], m[:]) }
func (a ARP) SetSenderIP(ip netip.Addr) { v := ip.As4(); copy(a[arpSPA:arpSPA+4], v[:]) }
func (a ARP) SetTargetIP(ip netip.Addr) { v := ip.As4(); copy(a[arpTPA:arpTPA+4], v[:]) }

// InitARP writes the fixed fields of an Ethernet/IPv4 ARP header into b
// (at least ARPLen bytes) and returns the view.
func InitARP(b []byte, op uint16) ARP {
	a := ARP(b[:ARPLen])
	binary.BigEndian.PutUint16(a[arpHType:], 1)
	binary.BigEndian.PutUint16(a[arpPType:], EtherTypeIPv4)
	a[arpHLen], a[arpPLen] = 6, 4
	a.SetOp(op)
	return a
}
