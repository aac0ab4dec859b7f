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
	ip, err := hostAddr(s)
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

// ParseHost6 reads an IPv6 unicast host address, alone ("2001:db8::1") or
// as the address of an interface-style prefix ("2001:db8::1/64"), as
// ICMP6PingResponder's addresses key takes it. It refuses IPv4 (mapped
// too), zones, and what is no host's own address: ::, multicast and
// loopback.
func ParseHost6(s string) (netip.Addr, error) {
	ip, err := hostAddr(s)
	switch {
	case err != nil:
		return netip.Addr{}, err
	case !ip.Is6() || ip.Is4In6() || ip.IsUnspecified() || ip.IsMulticast() || ip.IsLoopback() || ip.Zone() != "":
		return netip.Addr{}, errors.New("not a unicast IPv6 address")
	}
	return ip, nil
}

// hostAddr reads an address alone, or the address of a prefix.
func hostAddr(s string) (netip.Addr, error) {
	if strings.Contains(s, "/") {
		p, err := netip.ParsePrefix(s)
		return p.Addr(), err
	}
	return netip.ParseAddr(s)
}
