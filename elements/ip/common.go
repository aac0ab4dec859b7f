package ip

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/junction-dataplane/junction/packet"
)

// ipv4At returns the IPv4 header view at p.L3 if the frame holds at least a
// minimal header there. It checks only the length: callers check the rest.
func ipv4At(p *packet.Packet) (packet.IPv4, bool) {
	l3 := int(p.L3)
	if l3 > len(p.Data) || len(p.Data)-l3 < packet.IPv4MinLen {
		return nil, false
	}
	return packet.IPv4(p.Data[l3:]), true
}

// martian reports whether a (big-endian) is in one of the source ranges RFC
// 1812 5.3.7 forbids: 0.0.0.0/8 ("this network"), 127.0.0.0/8 (loopback),
// 224.0.0.0/4 (multicast) and 240.0.0.0/4 (reserved, including the limited
// broadcast 255.255.255.255). One compare on the first octet covers them.
func martian(a uint32) bool {
	f := a >> 24
	return f == 0 || f == 127 || f >= 224
}

// prefix4 is an IPv4 prefix as address and mask, for per-packet matching.
type prefix4 struct{ addr, mask uint32 }

func (p prefix4) contains(a uint32) bool { return a&p.mask == p.addr }

// NumberOrName is a key that takes a number or a symbolic name (ICMPError's
// icmp_type and icmp_code): TOML integers and strings both decode into it.
// A numeric string counts as a number.
type NumberOrName struct {
	Num  int
	Name string // set when the value was a name; resolved by Validate
}

// UnmarshalTOML implements toml.Unmarshaler (structurally; no import needed).
func (k *NumberOrName) UnmarshalTOML(v any) error {
	switch x := v.(type) {
	case int64:
		k.Num, k.Name = int(x), ""
		return nil
	case string:
		return k.UnmarshalText([]byte(x))
	}
	return fmt.Errorf("want a number or a name, got %T", v)
}

// UnmarshalText accepts the value as text (inline arguments).
func (k *NumberOrName) UnmarshalText(b []byte) error {
	s := strings.TrimSpace(string(b))
	if s == "" {
		return fmt.Errorf("empty value: want a number or a name")
	}
	if n, err := strconv.Atoi(s); err == nil {
		k.Num, k.Name = n, ""
		return nil
	}
	k.Num, k.Name = 0, s
	return nil
}

// normName folds a symbolic name so that "Time-Exceeded", "time_exceeded"
// and "timeexceeded" are the same.
func normName(s string) string {
	s = strings.ToLower(s)
	s = strings.ReplaceAll(s, "-", "")
	return strings.ReplaceAll(s, "_", "")
}
