package afpacket

import (
	"errors"
	"testing"
	"time"

	"github.com/junction-dataplane/junction/drivers"
	"github.com/junction-dataplane/junction/drivers/afxdp/fastpath"
	"github.com/junction-dataplane/junction/drivers/internal/drvtest"
	"github.com/junction-dataplane/junction/drivers/kfeature"
)

// TestReconfigureQueues: an afpacket device opened with one RX socket
// grows to two in place (the first socket and the added one form a fanout
// group): frames of 64 flows then reach both sockets, each frame once.
// Another key answers ErrReopen, and an aborted
// growth counts what its added socket had received. Lowering it back to
// one counts what the removed socket still held, and socket 0 then
// receives every frame.
//
// With the fast path in TC (fastpath = "tc") each queue is three sockets
// (IPv4, IPv6, ARP) in three fanout groups: the same holds, and a change
// of the fastpath key answers ErrReopen.
func TestReconfigureQueues(t *testing.T) {
	t.Run("off", func(t *testing.T) { reconfigureQueues(t, "off") })
	t.Run("tc", func(t *testing.T) {
		kfeature.Require(t, fastpath.TCFeatures...)
		reconfigureQueues(t, "tc")
	})
}

func reconfigureQueues(t *testing.T, key string) {
	pr := drvtest.NewPair(t, 1)
	c := tcCfg(pr.DevIf, key)
	c.Queues = 1
	d, err := openIn(t, pr.DevNS, c, 1)
	if err != nil {
		t.Fatal(err)
	}
	with := func(q int) *Config {
		n := *c
		n.Queues = q
		return &n
	}
	reconf := func(n *Config, dry bool) (ch drivers.WorkerChange, sum string, err error) {
		err = pr.DevNS.Do(func() error {
			ch, sum, err = d.Reconfigure(n, dry)
			return err
		})
		return
	}
	other := with(1)
	other.Frames *= 2
	if _, _, err := reconf(other, false); !errors.Is(err, drivers.ErrReopen) {
		t.Fatalf("frames changed: %v, want ErrReopen", err)
	}
	other = with(1)
	other.FastPath = map[string]string{"off": "auto", "tc": "off"}[key]
	if _, _, err := reconf(other, false); !errors.Is(err, drivers.ErrReopen) {
		t.Fatalf("fastpath changed: %v, want ErrReopen", err)
	}
	if _, sum, err := reconf(with(2), true); err != nil || sum != "queues 1 → 2, kept open, reconfigured" || d.RxQueues() != 1 {
		t.Fatalf("dry run: %q %v, RxQueues %d", sum, err, d.RxQueues())
	}
	ch, _, err := reconf(with(2), false)
	if err != nil || d.RxQueues() != 2 || d.RxFD(1) < 0 {
		t.Fatalf("prepared 1 → 2: %v, RxQueues %d", err, d.RxQueues())
	}
	ch.Apply()
	if err := ch.Finish(); err != nil {
		t.Fatal(err)
	}
	raw := pr.PeerNS.MustRaw(pr.PeerIf)
	const n = 256
	for i := 0; i < n; i++ {
		raw.Send(drvtest.Frame(pr.DevMAC, pr.PeerMAC, i%64, uint32(i), 64))
	}
	got, per := drvtest.Collect(d, []int{0, 1}, n, 3*time.Second)
	if len(got) != n || per[0] == 0 || per[1] == 0 || per[0]+per[1] != n {
		t.Fatalf("after 1 → 2: %d of %d frames, per socket %v", len(got), n, per)
	}

	// An aborted growth: what the added socket took is counted.
	if ch, _, err = reconf(with(3), false); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < n; i++ {
		raw.Send(drvtest.Frame(pr.DevMAC, pr.PeerMAC, i%64, uint32(1000+i), 64))
	}
	time.Sleep(200 * time.Millisecond)
	got, _ = drvtest.Collect(d, []int{0, 1}, n, 300*time.Millisecond)
	ch.Abort()
	stat := func(name string) uint64 {
		for _, s := range d.Stats() {
			if s.Name == name {
				return s.Value
			}
		}
		return 0
	}
	if d.RxQueues() != 2 || len(got) == n || uint64(len(got))+stat("rx_dropped_reload_aborted") != n {
		t.Fatalf("aborted 2 → 3: RxQueues %d, %d received, %d counted aborted, want %d in all", d.RxQueues(), len(got), stat("rx_dropped_reload_aborted"), n)
	}

	// 2 → 1: frames left in the removed socket's ring are counted, the
	// rest are received, and from the close on socket 0 takes every flow.
	ch, sum, err := reconf(with(1), false)
	if err != nil || sum != "queues 2 → 1, kept open, reconfigured" || d.RxQueues() != 1 {
		t.Fatalf("prepared 2 → 1: %q %v, RxQueues %d", sum, err, d.RxQueues())
	}
	rx0 := stat("rx_packets")
	for i := 0; i < n; i++ {
		raw.Send(drvtest.Frame(pr.DevMAC, pr.PeerMAC, i%64, uint32(2000+i), 64))
	}
	time.Sleep(200 * time.Millisecond)
	got, _ = drvtest.Collect(d, []int{0}, n, 300*time.Millisecond)
	ch.Apply()
	if err := ch.Finish(); err != nil {
		t.Fatal(err)
	}
	if d.RxQueues() != 1 || stat("rx_dropped_queue_removed") == 0 || uint64(len(got))+stat("rx_dropped_queue_removed") != n {
		t.Fatalf("2 → 1: RxQueues %d, %d received, %d counted removed, want %d in all", d.RxQueues(), len(got), stat("rx_dropped_queue_removed"), n)
	}
	for i := 0; i < n; i++ {
		raw.Send(drvtest.Frame(pr.DevMAC, pr.PeerMAC, i%64, uint32(3000+i), 64))
	}
	if got, _ = drvtest.Collect(d, []int{0}, n, 3*time.Second); len(got) != n {
		t.Fatalf("after 2 → 1: socket 0 received %d of %d frames", len(got), n)
	}
	if stat("rx_packets") < rx0+uint64(n) {
		t.Fatalf("rx_packets %d: the closed socket's counts left the totals (before %d)", stat("rx_packets"), rx0)
	}
}
