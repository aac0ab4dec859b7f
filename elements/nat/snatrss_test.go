package nat_test

import (
	"testing"

	"github.com/junction-dataplane/junction/drivers/rss"
	"github.com/junction-dataplane/junction/elements/nat"
	"github.com/junction-dataplane/junction/packet"
)

// TestSNATReplyRSS: with the reply device's RSS configuration (a key, a
// table over 4 queues, queue q polled by worker q mod 2), nearly every
// flow gets a port whose reply lands on a queue of its own worker (without
// it about half do), and every port still hashes home.
func TestSNATReplyRSS(t *testing.T) {
	key := make([]byte, 40)
	for i := range key {
		key[i] = byte(i*37 + 11)
	}
	cfg := &rss.Config{Key: key, Table: make([]uint32, 128), HFunc: 1}
	for i := range cfg.Table {
		cfg.Table[i] = uint32(i % 4)
	}
	const workers, n = 2, 1000
	for w := range workers {
		share := func(withRSS bool) float64 {
			r := newSNATRig(t, 4096, w, workers, "203.0.113.1", "1024-65535", true)
			if withRSS {
				r.s.Element.(*nat.SNAT).SetReplyRSS(cfg)
			}
			flows := r.push(n)
			if got := r.s.Counter("translated"); got != n {
				t.Fatalf("worker %d: %d of %d flows translated", w, got, n)
			}
			home := 0
			for _, i := range flows {
				rep := r.table.Conn(i).T[1]
				if h := nat.Target(packet.FlowHashV4(rep.Src, rep.Dst, rep.Sport, rep.Dport, rep.Proto), workers); h != w {
					t.Fatalf("worker %d: port %d hashes to worker %d", w, rep.Dport, h)
				}
				if cfg.Queue(rep.Src, rep.Dst, rep.Sport, rep.Dport)%workers == w {
					home++
				}
			}
			return float64(home) / n
		}
		without, with := share(false), share(true)
		t.Logf("worker %d: replies on its own queues: %.1f%% without RSS, %.1f%% with", w, 100*without, 100*with)
		if with < 0.95 || without > 0.7 {
			t.Errorf("worker %d: replies on its own queues: %.1f%% with RSS (want ≥ 95%%), %.1f%% without", w, 100*with, 100*without)
		}
	}
}
