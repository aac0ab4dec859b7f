package classifier

import (
	"errors"
	"strings"
	"testing"

	"github.com/junction-dataplane/junction/elements"
)

func TestParseErrors(t *testing.T) {
	deep := strings.Repeat("(", 100) + "tcp" + strings.Repeat(")", 100)
	tests := []struct {
		rule string
		col  int
		msg  string // the whole message after "col N: "
	}{
		// unknown words, with the nearest keyword or what the word lacks
		{"tpc", 1, `unknown word "tpc", did you mean "tcp"?`},
		{"arp or ipp", 8, `unknown word "ipp", did you mean "ip" or "ip6"?`},
		{"tcp and dst prot 80", 13, `expected host, net or port after "dst", found "prot"`},
		{"tcp and prot 80", 9, `unknown word "prot", did you mean "proto" or "port"?`},
		{"udp or icmq", 8, `unknown word "icmq", did you mean "icmp"?`},
		{"ARQ", 1, `unknown word "ARQ", did you mean "arp"?`},
		{"tcp and xyzzy", 9, `unknown word "xyzzy"`},
		{"10.0.0.1", 1, `unknown word "10.0.0.1": an address needs "host" before it`},
		{"dst 10.0.0.1", 5, `expected host, net or port after "dst", found "10.0.0.1"`},
		{"tcp and 80", 9, `unknown word "80": a number needs "port" or "proto" before it`},
		{"10.0.0.0/8", 1, `unknown word "10.0.0.0/8": a prefix needs "net" before it`},
		{"request", 1, `"request" must follow "arp"`},
		{"ip reply", 4, `expected and/or before "reply"`},
		{"tcp, udp", 1, `unknown word "tcp,", did you mean "tcp"?`},
		// missing operands
		{"tcp and", 8, `missing operand after "and"`},
		{"tcp ||", 7, `missing operand after "||"`},
		{"not", 4, `missing operand after "not"`},
		{"!", 2, `missing operand after "!"`},
		{"and tcp", 1, `missing operand before "and"`},
		{"tcp or or udp", 8, `missing operand before "or"`},
		{"tcp and (udp or)", 16, `missing operand after "or"`},
		{"tcp and )", 9, `missing operand after "and"`},
		{"not )", 5, `missing operand after "not"`},
		{"src", 4, `missing host, net or port after "src"`},
		{"src tcp", 5, `expected host, net or port after "src", found "tcp"`},
		{"host", 5, `missing an address after "host"`},
		{"src net", 8, `missing a prefix after "net"`},
		{"dst port", 9, `missing a port number after "port"`},
		{"port )", 6, `missing a port number after "port"`},
		{"proto", 6, `missing protocol after "proto" (a number 0-255 or tcp, udp, icmp, icmp6)`},
		// parentheses
		{"(tcp", 1, `unclosed "("`},
		{"((tcp) or udp", 1, `unclosed "("`},
		{"arp or (tcp and (udp)", 8, `unclosed "("`},
		{"tcp)", 4, `unmatched ")"`},
		{"(tcp))", 6, `unmatched ")"`},
		{")", 1, `unmatched ")"`},
		{"()", 2, `empty parentheses`},
		{"(tcp udp)", 6, `expected and/or or ")" before "udp"`},
		{deep, 65, `nested more than 64 deep`},
		{strings.Repeat("not ", 70) + "tcp", 257, `nested more than 64 deep`},
		// juxtaposition, trailing garbage
		{"tcp udp", 5, `expected and/or before "udp"`},
		{"arp request reply", 13, `expected and/or before "reply"`},
		{"ip tcp", 4, `expected and/or before "tcp"`}, // "ip proto 6" is tcpdump's qualified form: accepted
		{"tcp and udp garbage", 13, `expected and/or before "garbage"`},
		{"tcp (udp)", 5, `expected and/or before "("`},
		{"tcp !udp", 5, `expected and/or before "!"`},
		{"tcp & udp", 5, `unexpected "&" (did you mean "&&"?)`},
		{"tcp | udp", 5, `unexpected "|" (did you mean "||"?)`},
		// addresses, prefixes, numbers
		{"host 1.2.3", 6, `bad address "1.2.3"`},
		{"src host 10.0.0.256", 10, `bad address "10.0.0.256"`},
		{"host fe80::1%eth0", 6, `bad address "fe80::1%eth0"`},
		{"host 2001:db8::g", 6, `bad address "2001:db8::g"`},
		{"host 10.0.0.0/8", 6, `host takes an address, not the prefix "10.0.0.0/8" (use net)`},
		{"net 10.0.0.0/33", 5, `bad prefix "10.0.0.0/33"`},
		{"net 2001:db8::/129", 5, `bad prefix "2001:db8::/129"`},
		{"net 10.1.0.0/8", 5, `prefix "10.1.0.0/8" has bits set beyond /8 (did you mean 10.0.0.0/8?)`},
		{"dst net 2001:db8::1/64", 9, `prefix "2001:db8::1/64" has bits set beyond /64 (did you mean 2001:db8::/64?)`},
		{"net 10.0.0.1", 5, `net takes a prefix such as 10.0.0.1/24, not the address "10.0.0.1" (or use host)`},
		{"net foo", 5, `bad prefix "foo"`},
		{"port 65536", 6, `port 65536 out of range 0-65535`},
		{"port 99999999999999999999999", 6, `port 99999999999999999999999 out of range 0-65535`},
		{"port -1", 6, `bad port "-1": want a number 0-65535`},
		{"port http", 6, `bad port "http": want a number 0-65535`},
		{"src port 0x50", 10, `bad port "0x50": want a number 0-65535`},
		{"proto 256", 7, `proto 256 out of range 0-255`},
		{"proto 99999999999999999999", 7, `proto 99999999999999999999 out of range 0-255`},
		{"proto gre", 7, `bad protocol "gre": want a number 0-255 or tcp, udp, icmp, icmp6`},
		// empty rules and "-"
		{"", 1, `empty rule (write "-" to match every packet)`},
		{"   ", 1, `empty rule (write "-" to match every packet)`},
		{"- or tcp", 1, `"-" (any packet) must be the whole rule`},
		{"tcp or -", 8, `"-" (any packet) must be the whole rule`},
		{"(-)", 2, `"-" (any packet) must be the whole rule`},
		{"not -", 5, `"-" (any packet) must be the whole rule`},
		{"- -", 1, `"-" (any packet) must be the whole rule`},
	}
	for _, tc := range tests {
		_, err := compileRules([]string{"arp", tc.rule})
		var pe *ParseError
		if !errors.As(err, &pe) {
			t.Errorf("%q: error %v, want a *ParseError", tc.rule, err)
			continue
		}
		if pe.Rule != 1 || pe.Text != tc.rule || pe.Col != tc.col || pe.Msg != tc.msg {
			t.Errorf("%q:\n got rule %d col %d: %s\nwant rule 1 col %d: %s", tc.rule, pe.Rule, pe.Col, pe.Msg, tc.col, tc.msg)
		}
		if pe.Col < 1 || pe.Col > len(tc.rule)+1 {
			t.Errorf("%q: col %d outside the rule", tc.rule, pe.Col)
		}
	}
}

// Validate's error names the key, the rule (by output number) and the column.
func TestValidateError(t *testing.T) {
	c := &Config{Rules: []string{"arp", "tpc or udp", "-"}}
	err := c.Validate()
	var ke *elements.KeyError
	if !errors.As(err, &ke) || ke.Key != "rules" {
		t.Fatalf("error %v, want a KeyError for rules", err)
	}
	want := `key "rules": rule 1 "tpc or udp": col 1: unknown word "tpc", did you mean "tcp"?`
	if err.Error() != want {
		t.Errorf("error\n %s\nwant\n %s", err, want)
	}
	var pe *ParseError
	if !errors.As(err, &pe) || pe.Col != 1 {
		t.Errorf("no *ParseError inside %v", err)
	}
	if err := (&Config{Rules: nil}).Validate(); err == nil || !strings.Contains(err.Error(), "at least one rule") {
		t.Errorf("empty rule list: %v", err)
	}
}

// Rules that parse, in every spelling the doc promises.
func TestParseAccepts(t *testing.T) {
	for _, r := range []string{
		"-", " - ", "arp", "arp request", "ARP Reply", "ip", "ip6", "tcp", "udp", "icmp", "icmp6",
		"proto 0", "proto 255", "proto tcp", "proto UDP", "proto icmp6",
		"src host 10.0.0.1", "dst host ::1", "host ::ffff:10.0.0.1", "net 0.0.0.0/0", "net ::/0",
		"src net 10.0.0.0/8", "dst net 2001:db8::/32", "port 0", "port 65535", "src port 080",
		"tcp and udp", "tcp&&udp", "tcp||udp", "!tcp", "not(tcp)", "(tcp)or(udp)", "tcp AND NOT udp",
		"((arp))", "\ttcp\n", "not not not arp",
		strings.Repeat("(", 64) + "tcp" + strings.Repeat(")", 64),
	} {
		if _, err := compileRules([]string{r}); err != nil {
			t.Errorf("%q: %v", r, err)
		}
	}
}

func TestEditDistance(t *testing.T) {
	for _, tc := range []struct {
		a, b string
		d    int
	}{{"tpc", "tcp", 1}, {"tcp", "tcp", 0}, {"", "arp", 3}, {"hots", "host", 1}, {"icmp", "icmp6", 1}, {"prot", "port", 1}, {"abc", "xyz", 3}} {
		if d := editDistance(tc.a, tc.b); d != tc.d {
			t.Errorf("editDistance(%q, %q) = %d, want %d", tc.a, tc.b, d, tc.d)
		}
	}
}
