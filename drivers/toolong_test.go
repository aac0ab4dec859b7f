package drivers

import (
	"math"
	"testing"
)

func TestTooLong(t *testing.T) {
	max := MaxFrame(1000)
	if max != 1014 || MaxFrame(0) != math.MaxInt {
		t.Fatalf("MaxFrame(1000) = %d, MaxFrame(0) = %d", max, MaxFrame(0))
	}
	frame := func(n int, tag bool) []byte {
		f := make([]byte, n)
		f[12], f[13] = 0x08, 0x00
		if tag {
			f[12], f[13] = 0x81, 0x00
		}
		return f
	}
	for _, c := range []struct {
		n    int
		tag  bool
		want bool
	}{{60, false, false}, {1014, false, false}, {1015, false, true}, {1018, false, true},
		{1018, true, false}, {1019, true, true}, {9000, true, true}} {
		if got := TooLong(frame(c.n, c.tag), max); got != c.want {
			t.Errorf("TooLong(%d bytes, tagged %v) = %v, want %v", c.n, c.tag, got, c.want)
		}
	}
	if TooLong(make([]byte, 9000), MaxFrame(0)) {
		t.Errorf("no MTU known: a frame refused")
	}
}
