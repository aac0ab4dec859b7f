package classifier

import (
	"net/netip"
	"strings"
	"testing"

	"github.com/junction-dataplane/junction/elements"
)

func TestParseFilterErrors(t *testing.T) {
	for _, c := range []struct{ text, want string }{
		{"tcp and", `filter "tcp and": col 8: missing operand`},
		{"dst port 99999", `filter "dst port 99999": col 10`},
		{"tcp or or udp", `filter "tcp or or udp": col 8`},
		{"src net 10.0.0.0/33", `col 9`},
		{"(tcp", `filter "(tcp"`},
	} {
		_, err := ParseFilter(c.text)
		if err == nil {
			t.Errorf("%q: no error", c.text)
			continue
		}
		if !strings.Contains(err.Error(), c.want) || strings.Contains(err.Error(), "\n") {
			t.Errorf("%q: %v, want one line containing %q", c.text, err, c.want)
		}
	}
}

func flow(proto, src string, sport uint16, dst string, dport uint16, state string) elements.Flow {
	o := elements.FlowTuple{Src: netip.MustParseAddr(src), Dst: netip.MustParseAddr(dst), Sport: sport, Dport: dport}
	return elements.Flow{Proto: proto, Orig: o, Reply: elements.FlowTuple{Src: o.Dst, Dst: o.Src, Sport: o.Dport, Dport: o.Sport}, State: state}
}

// matchFlowCase is a filter, a flow, and whether the filter matches it.
type matchFlowCase struct {
	filter string
	f      elements.Flow
	want   bool
}

// checkMatchFlow checks each case's filter on its flow.
func checkMatchFlow(t *testing.T, cases []matchFlowCase) {
	t.Helper()
	for _, c := range cases {
		f, err := ParseFilter(c.filter)
		if err != nil {
			t.Errorf("%q: %v", c.filter, err)
			continue
		}
		if got := f.MatchFlow(c.f); got != c.want {
			t.Errorf("%q on %s %v: %v, want %v", c.filter, c.f.Proto, c.f.Orig, got, c.want)
		}
	}
}

func TestMatchFlow(t *testing.T) {
	web := flow("tcp", "192.168.1.10", 40000, "203.0.113.1", 8080, "ESTABLISHED")
	dns := flow("udp", "192.168.1.10", 5353, "8.8.8.8", 53, "UNREPLIED")
	ping := flow("icmp", "192.168.1.10", 77, "203.0.113.2", 77, "REPLIED")
	checkMatchFlow(t, []matchFlowCase{
		{"", web, true},
		{"-", dns, true},
		{"tcp", web, true},
		{"tcp", dns, false},
		{"tcp and dst port 8080", web, true},
		{"tcp and dst port 80", web, false},
		{"src port 40000", web, true},
		{"port 53", dns, true},
		{"udp and dst host 8.8.8.8", dns, true},
		{"src net 192.168.1.0/24", ping, true},
		{"src net 10.0.0.0/8", ping, false},
		{"icmp", ping, true},
		{"icmp", web, false},
		{"ct established", web, true},
		{"ct new", dns, true},
		{"ct established", dns, false},
		{"not tcp", dns, true},
	})
}

// MatchFlow builds a frame on the stack: nothing escapes per flow.
func TestMatchFlowAllocs(t *testing.T) {
	f, _ := ParseFilter("tcp and dst port 8080")
	web := flow("tcp", "192.168.1.10", 40000, "203.0.113.1", 8080, "ESTABLISHED")
	if a := testing.AllocsPerRun(100, func() { f.MatchFlow(web) }); a != 0 {
		t.Errorf("%v allocations per MatchFlow", a)
	}
}
