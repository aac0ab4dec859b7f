package packet

import "encoding/binary"

// Ethernet header layout:
//
//	 0                   1
//	 0 1 2 3 4 5 6 7 8 9 0 1 2 3
//	+-----------+-----------+---+
//	|  dst MAC  |  src MAC  |typ|
//	+-----------+-----------+---+
const (
	EthernetLen = 14
	ethDst      = 0
	ethSrc      = 6
	ethType     = 12
)

// EtherTypes Junction looks at.
const (
	EtherTypeIPv4 = 0x0800
	EtherTypeARP  = 0x0806
	EtherTypeIPv6 = 0x86DD
	EtherTypeVLAN = 0x8100
)

// MAC is an Ethernet address.
type MAC [6]byte

// BroadcastMAC is ff:ff:ff:ff:ff:ff.
var BroadcastMAC = MAC{0xff, 0xff, 0xff, 0xff, 0xff, 0xff}

// String formats m as aa:bb:cc:dd:ee:ff (not for the hot path).
func (m MAC) String() string {
	const hex = "0123456789abcdef"
	b := make([]byte, 0, 17)
	for i, x := range m {
		if i > 0 {
			b = append(b, ':')
		}
		b = append(b, hex[x>>4], hex[x&0xf])
	}
	return string(b)
}

// ParseMAC parses aa:bb:cc:dd:ee:ff (or with '-'); on failure it returns
// the zero MAC and false.
func ParseMAC(s string) (MAC, bool) {
	var m MAC
	if len(s) != 17 {
		return m, false
	}
	for i := 0; i < 6; i++ {
		hi, ok1 := unhex(s[i*3])
		lo, ok2 := unhex(s[i*3+1])
		if !ok1 || !ok2 {
			return MAC{}, false
		}
		// One separator throughout, as net.ParseMAC requires.
		if i < 5 && (s[i*3+2] != ':' && s[i*3+2] != '-' || s[i*3+2] != s[2]) {
			return MAC{}, false
		}
		m[i] = hi<<4 | lo
	}
	return m, true
}

func unhex(c byte) (byte, bool) {
	switch {
	case '0' <= c && c <= '9':
		return c - '0', true
	case 'a' <= c && c <= 'f':
		return c - 'a' + 10, true
	case 'A' <= c && c <= 'F':
		return c - 'A' + 10, true
	}
	return 0, false
}

// Ethernet is a view of an Ethernet II header. Check len(b) >= EthernetLen
// (or use AsEthernet) before using the accessors.
type Ethernet []byte

// AsEthernet returns the view and whether frame is long enough.
func AsEthernet(frame []byte) (Ethernet, bool) {
	if len(frame) < EthernetLen {
		return nil, false
	}
	return Ethernet(frame), true
}

func (e Ethernet) Dst() (m MAC)     { copy(m[:], e[ethDst:ethDst+6]); return }
func (e Ethernet) Src() (m MAC)     { copy(m[:], e[ethSrc:ethSrc+6]); return }
func (e Ethernet) Type() uint16     { return binary.BigEndian.Uint16(e[ethType:]) }
func (e Ethernet) SetDst(m MAC)     { copy(e[ethDst:ethDst+6], m[:]) }
func (e Ethernet) SetSrc(m MAC)     { copy(e[ethSrc:ethSrc+6], m[:]) }
func (e Ethernet) SetType(t uint16) { binary.BigEndian.PutUint16(e[ethType:], t) }
func (e Ethernet) Payload() []byte  { return e[EthernetLen:] }
