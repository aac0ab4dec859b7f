package classifier

import (
	"encoding/binary"
	"strings"
	"testing"
)

// tagged returns an IPv4 frame (10.0.0.1 -> 10.0.0.2, UDP) under tags,
// outermost first; each tag is {TPID, TCI}.
func tagged(tags ...[2]uint16) []byte {
	f := make([]byte, 12, 80)
	for _, t := range tags {
		f = binary.BigEndian.AppendUint16(f, t[0])
		f = binary.BigEndian.AppendUint16(f, t[1])
	}
	f = binary.BigEndian.AppendUint16(f, 0x0800)
	ip := make([]byte, 28)
	ip[0], ip[9] = 0x45, 17
	binary.BigEndian.PutUint16(ip[2:], 28)
	copy(ip[12:], []byte{10, 0, 0, 1, 10, 0, 0, 2})
	return append(f, ip...)
}

func TestVLAN(t *testing.T) {
	pr, err := compileRules([]string{"vlan 10", "vlan 20 or vlan 4094", "vlan", "ip", "-"})
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name  string
		frame []byte
		port  int
	}{
		{"802.1Q 10", tagged([2]uint16{0x8100, 10}), 0},
		{"802.1Q 10, priority 5", tagged([2]uint16{0x8100, 5<<13 | 10}), 0},
		{"802.1ad 10 over 802.1Q 20: the outer tag", tagged([2]uint16{0x88a8, 10}, [2]uint16{0x8100, 20}), 0},
		{"802.1Q 20", tagged([2]uint16{0x8100, 20}), 1},
		{"802.1Q 4094", tagged([2]uint16{0x8100, 4094}), 1},
		{"802.1Q 30: any tag", tagged([2]uint16{0x8100, 30}), 2},
		{"priority tag (id 0): any tag", tagged([2]uint16{0x8100, 0}), 2},
		{"untagged", tagged(), 3},
		{"tag cut short", tagged([2]uint16{0x8100, 10})[:15], 4},
	}
	for _, tt := range tests {
		if got := pr.classify(tt.frame, 14); got != tt.port {
			t.Errorf("%s: port %d, want %d", tt.name, got, tt.port)
		}
	}
	// After the tag, only vlan rules see a tagged frame.
	pr, _ = compileRules([]string{"ip", "vlan 10 and not vlan 11", "-"})
	if got := pr.classify(tagged([2]uint16{0x8100, 10}), 18); got != 1 {
		t.Errorf("tagged IPv4: port %d, want 1 (no ip rule matches a tag)", got)
	}
}

func TestVLANErrors(t *testing.T) {
	for _, tc := range []struct{ rule, msg string }{
		{"vlan 0", `rule 0 "vlan 0": col 6: vlan 0 out of range 1-4094 (0 is a priority tag, 4095 reserved)`},
		{"vlan 4095", `rule 0 "vlan 4095": col 6: vlan 4095 out of range 1-4094 (0 is a priority tag, 4095 reserved)`},
		{"vlan 99999999999999999999", `col 6: vlan 99999999999999999999 out of range 1-4094`},
		{"vlan ten", `col 6: expected and/or before "ten"`},
		{"vlam 10", `unknown word "vlam", did you mean "vlan"?`},
	} {
		_, err := compileRules([]string{tc.rule})
		if err == nil || !strings.Contains(err.Error(), tc.msg) {
			t.Errorf("%q: error %v, want %q", tc.rule, err, tc.msg)
		}
	}
}
