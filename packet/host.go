package packet

import (
	"errors"
	"net/netip"
	"strings"
)

// ParseHost4 reads an IPv4 unicast host address, alone ("10.1.0.1") or as
// the address of an interface-style prefix ("10.1.0.1/24"), as the
// addresses keys of ARPResponder, ARPQuerier and ICMPPingResponder take
// it. It refuses IPv6 and what is no host's own address: 0.0.0.0, the
// limited broadcast, multicast and loopback.
func ParseHost4(s string) (netip.Addr, error) {
	var ip netip.Addr
	var err error
	if strings.Contains(s, "/") {
		var p netip.Prefix
		p, err = netip.ParsePrefix(s)
		ip = p.Addr()
	} else {
		ip, err = netip.ParseAddr(s)
	}
	switch {
	case err != nil:
		return netip.Addr{}, err
	case !ip.Is4():
		return netip.Addr{}, errors.New("not an IPv4 address")
	case ip.IsUnspecified() || ip.IsMulticast() || ip.IsLoopback() || ip == netip.AddrFrom4([4]byte{255, 255, 255, 255}):
		return netip.Addr{}, errors.New("not a unicast address")
	}
	return ip, nil
}
