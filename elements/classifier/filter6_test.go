package classifier

import (
	"testing"
)

// TestMatchFlow6 matches IPv6 flows as their first packet would match:
// ip6, v6 hosts and nets, ports, icmp6, ct; IPv4-only rules do not match.
func TestMatchFlow6(t *testing.T) {
	web := flow("tcp", "2001:db8:1::10", 40000, "2001:db8:2::1", 443, "ESTABLISHED")
	dns := flow("udp", "2001:db8:1::10", 5353, "2001:4860::8888", 53, "UNREPLIED")
	ping := flow("icmp6", "2001:db8:1::10", 77, "2001:db8:2::2", 77, "REPLIED")
	v4 := flow("tcp", "192.168.1.10", 40000, "203.0.113.1", 443, "ESTABLISHED")
	checkMatchFlow(t, []matchFlowCase{
		{"", web, true},
		{"ip6", web, true},
		{"ip6", v4, false},
		{"ip", web, false},
		{"ip", v4, true},
		{"tcp and dst port 443", web, true},
		{"tcp and dst port 443", v4, true},
		{"tcp and dst port 80", web, false},
		{"src host 2001:db8:1::10", web, true},
		{"dst host 2001:db8:1::10", web, false},
		{"src net 2001:db8:1::/48", dns, true},
		{"src net 2001:db8:9::/48", dns, false},
		{"src net 192.168.1.0/24", web, false},
		{"udp and port 53", dns, true},
		{"icmp6", ping, true},
		{"icmp", ping, true},
		{"ip and icmp", ping, false},
		{"icmp6", web, false},
		{"ct established", web, true},
		{"ct new", dns, true},
		{"ip6 and ct established", ping, true},
	})
}

func TestMatchFlow6Allocs(t *testing.T) {
	f, _ := ParseFilter("ip6 and tcp and dst port 443")
	web := flow("tcp", "2001:db8:1::10", 40000, "2001:db8:2::1", 443, "ESTABLISHED")
	if a := testing.AllocsPerRun(100, func() { f.MatchFlow(web) }); a != 0 {
		t.Errorf("%v allocations per MatchFlow of an IPv6 flow", a)
	}
}
