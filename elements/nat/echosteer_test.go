package nat_test

import (
	"encoding/binary"
	"testing"

	"github.com/junction-dataplane/junction/elements/conntrack"
	ct "github.com/junction-dataplane/junction/elements/conntrack/cttest"
	"github.com/junction-dataplane/junction/elements/elementtest"
	"github.com/junction-dataplane/junction/elements/flowsteer"
	"github.com/junction-dataplane/junction/elements/nat"
)

// TestSNATEchoIDWorker: with a masquerading SNAT's steering by port and
// two workers, an echo is steered by its identifier both ways
// (flowsteer), so the identifier SNAT gives the reply must be one the
// worker owns: an identifier it keeps is (its request came to that
// worker by it), and one it must change (below the port range, here
// 100-130) is replaced by one of the worker's own, or the reply would
// reach the other worker and be lost.
func TestSNATEchoIDWorker(t *testing.T) {
	for w := range 2 {
		cth := elementtest.New(t, "Conntrack", &conntrack.Config{Capacity: 256}, nil)
		s := elementtest.New(t, "SNAT", &nat.SNATConfig{To: pub, Ports: "1024-65535", Inside: "192.168.1.0/24"},
			&elementtest.Options{Worker: w, Workers: 2})
		echo := func(id uint16) uint16 {
			cth.Push(0, ct.Frame(ct.F{Proto: "icmp", Src: inside, Dst: client, ID: id}))
			s.PushBatch(0, take(cth))
			p := take(s)
			if p == nil {
				t.Fatalf("worker %d: echo with identifier %d not translated", w, id)
			}
			defer p.Free()
			return binary.BigEndian.Uint16(p.Data[14+20+4:])
		}
		for id := uint16(100); id <= 130; id++ {
			if got := echo(id); flowsteer.Port(got, 2) != w || got < 1024 {
				t.Fatalf("worker %d: identifier %d became %d, owned by worker %d", w, id, got, flowsteer.Port(got, 2))
			}
		}
		kept := uint16(5000)
		for flowsteer.Port(kept, 2) != w {
			kept++
		}
		if got := echo(kept); got != kept {
			t.Errorf("worker %d: identifier %d (its own, free) became %d", w, kept, got)
		}
	}
}
