package classifier

import (
	"bytes"
	"slices"
	"strings"
	"testing"

	"github.com/junction-dataplane/junction/elements/elementtest"
)

// matching returns the names of the test frames rule matches.
func matching(t *testing.T, rule string) []string {
	t.Helper()
	h := elementtest.New(t, "Classifier", &Config{Rules: []string{rule}}, nil)
	all := names()
	var frames [][]byte
	for _, n := range all {
		frames = append(frames, named[n])
	}
	h.Push(0, frames...)
	var got []string
	for _, f := range h.Outs[0].Frames() {
		for _, n := range all {
			if bytes.Equal(f, named[n]) {
				got = append(got, n)
			}
		}
	}
	h.CheckNoLeak()
	return got
}

// TestTcpdumpQualifiedForm: tcpdump's "tcp dst port 23" is "tcp and dst
// port 23", on every test frame; likewise udp, ip and ip6 qualifiers.
func TestTcpdumpQualifiedForm(t *testing.T) {
	for _, tc := range []struct{ short, long string }{
		{"tcp dst port 80", "tcp and dst port 80"},
		{"tcp port 80", "tcp and port 80"},
		{"tcp src port 1234", "tcp and src port 1234"},
		{"udp port 53", "udp and port 53"},
		{"udp dst port 53 or tcp port 443", "(udp and dst port 53) or (tcp and port 443)"},
		{"ip host 10.0.0.1", "ip and host 10.0.0.1"},
		{"ip src net 10.0.0.0/8", "ip and src net 10.0.0.0/8"},
		{"ip6 proto 58", "ip6 and proto 58"},
		{"not tcp port 80", "not (tcp and port 80)"},
	} {
		got, want := matching(t, tc.short), matching(t, tc.long)
		if !slices.Equal(got, want) {
			t.Errorf("%q matched %v; %q matched %v", tc.short, got, tc.long, want)
		}
		if len(want) == 0 && !strings.HasPrefix(tc.short, "not") {
			t.Errorf("%q matches no test frame: the comparison proves nothing", tc.long)
		}
	}
	// "udp port 53" is UDP only: a TCP packet to port 53 would not match.
	if got := matching(t, "tcp port 53"); len(got) != 0 {
		t.Errorf("tcp port 53 matched %v, want nothing (port 53 is UDP in the frames)", got)
	}
}

// TestOtherToolsWords: words from other tools get Junction's word as the
// suggestion, not merely the nearest spelling.
func TestOtherToolsWords(t *testing.T) {
	for _, tc := range []struct{ rule, want string }{
		{"ipv4", `unknown word "ipv4", did you mean "ip"?`},
		{"ipv6 and tcp", `unknown word "ipv6", did you mean "ip6"?`},
		{"icmpv6", `unknown word "icmpv6", did you mean "icmp6"?`},
		{"tcp and dport 22", `unknown word "dport", did you mean "dst port"?`},
	} {
		_, err := compileRules([]string{tc.rule})
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%q: got %v, want %s", tc.rule, err, tc.want)
		}
	}
}
