package classifier

import (
	"testing"

	"github.com/junction-dataplane/junction/elements/elementtest"
	"github.com/junction-dataplane/junction/packet"
)

// TestCtPrimitives checks that "ct STATE" reads the annotation Conntrack
// writes (not the frame), combined with other primitives.
func TestCtPrimitives(t *testing.T) {
	h := elementtest.New(t, "Classifier", &Config{Rules: []string{
		"ct established or ct related", "ct new and udp", "ct invalid", "not ct untracked", "-"}}, nil)
	frame := make([]byte, 64)
	frame[12], frame[13], frame[14], frame[23] = 0x08, 0x00, 0x45, 17
	for _, tc := range []struct {
		state uint8
		port  int
	}{{packet.CtEstablished, 0}, {packet.CtRelated, 0}, {packet.CtNew, 1}, {packet.CtInvalid, 2}, {packet.CtUntracked, 4}} {
		p := h.Packet(frame)
		p.Ct.State = tc.state
		h.PushBatch(0, p)
		for i, o := range h.Outs {
			if want := map[bool]int{true: 1}[i == tc.port]; len(o.Pkts) != want {
				t.Fatalf("state %d: output %d has %d packets, want %d", tc.state, i, len(o.Pkts), want)
			}
		}
		h.Reset()
	}
	for _, bad := range []string{"ct", "ct bogus", "ct new new"} {
		if _, err := compileRules([]string{bad}); err == nil {
			t.Errorf("%q: no error", bad)
		}
	}
}
