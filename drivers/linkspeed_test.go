package drivers

import "testing"

// TestLinkSpeed: lo has no link speed; a missing interface neither; a
// name too long for the kernel is refused before the ioctl.
func TestLinkSpeed(t *testing.T) {
	for _, name := range []string{"lo", "no-such-if0", "", "a-name-far-too-long-for-ifnamsiz"} {
		if s, ok := LinkSpeed(name); ok {
			t.Errorf("%q: speed %d bit/s, want none", name, s)
		}
	}
}
