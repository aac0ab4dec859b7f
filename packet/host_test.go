package packet

import "testing"

func TestParseHost(t *testing.T) {
	for _, c := range []struct {
		s      string
		v4, v6 bool // accepted by ParseHost4, ParseHost6
	}{
		{"10.1.0.1", true, false},
		{"10.1.0.1/24", true, false},
		{"2001:db8::1", false, true},
		{"2001:db8::1/64", false, true},
		{"0.0.0.0", false, false},
		{"255.255.255.255", false, false},
		{"224.0.0.1", false, false},
		{"127.0.0.1", false, false},
		{"::", false, false},
		{"::1", false, false},
		{"ff02::1", false, false},
		{"::ffff:10.1.0.1", false, false},
		{"fe80::1%eth0", false, false},
		{"10.1.0.1/33", false, false},
		{"host", false, false},
	} {
		_, err4 := ParseHost4(c.s)
		_, err6 := ParseHost6(c.s)
		if (err4 == nil) != c.v4 || (err6 == nil) != c.v6 {
			t.Errorf("%q: ParseHost4 error %v, ParseHost6 error %v; want accepted %v, %v", c.s, err4, err6, c.v4, c.v6)
		}
	}
}
