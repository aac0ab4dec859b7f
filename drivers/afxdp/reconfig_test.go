package afxdp

import (
	"strings"
	"testing"
	"time"

	"github.com/junction-dataplane/junction/drivers"
	"github.com/junction-dataplane/junction/drivers/internal/drvtest"
	"github.com/junction-dataplane/junction/packet"
)

// TestChangedKeys: every key but queues is named when it differs.
func TestChangedKeys(t *testing.T) {
	a := cfg("lan0", "auto")
	b := *a
	b.Queues = 3
	if k := changedKeys(a, &b); len(k) != 0 {
		t.Fatalf("queues alone: %v", k)
	}
	b.Ring, b.Mode, b.FastPath, b.RSS, b.Frames, b.Interface = 128, "native", true, "symmetric", 1<<15, "lan1"
	if k := strings.Join(changedKeys(a, &b), " "); k != "interface frames ring mode fastpath rss" {
		t.Fatalf("changed keys %q", k)
	}
}

// TestReconfigureQueues: a 2-queue veth device goes to 1 queue and back
// to 2 in place. A key other than queues, or more queues than the
// interface has, is refused with nothing changed; a dry run changes
// nothing; frames left in the removed queue's RX ring are counted in
// rx_dropped_queue_removed (none lost silently); the queue is released,
// so that growing back binds a new socket on it, and both queues then
// receive; an aborted change leaves the device as it was.
func TestReconfigureQueues(t *testing.T) {
	pr, c, d := openTwoQueues(t)
	with := func(queues int, mod func(*Config)) *Config {
		n := *c
		n.Queues = queues
		if mod != nil {
			mod(&n)
		}
		return &n
	}
	reconf := func(n *Config, dry bool) (drivers.WorkerChange, string, error) {
		var ch drivers.WorkerChange
		var sum string
		err := pr.DevNS.Do(func() (err error) {
			ch, sum, err = d.Reconfigure(n, dry)
			return err
		})
		return ch, sum, err
	}
	if _, _, err := reconf(with(1, func(n *Config) { n.Ring = 1024 }), false); err == nil || !strings.Contains(err.Error(), "ring") {
		t.Fatalf("ring changed: %v", err)
	}
	if _, _, err := reconf(with(3, nil), false); err == nil || !strings.Contains(err.Error(), "3 queues") {
		t.Fatalf("3 queues on a 2-queue veth: %v", err)
	}
	if ch, sum, err := reconf(with(1, nil), true); err != nil || ch != nil || sum != "queues 2 → 1, kept open, reconfigured" || d.RxQueues() != 2 {
		t.Fatalf("dry run: %v %q %v, RxQueues %d", ch, sum, err, d.RxQueues())
	}
	ch, _, err := reconf(with(1, nil), false)
	if err != nil || d.RxQueues() != 1 {
		t.Fatalf("prepared 2 → 1: %v, RxQueues %d", err, d.RxQueues())
	}
	ch.Abort()
	if d.RxQueues() != 2 || len(d.queues) != 2 {
		t.Fatalf("aborted: RxQueues %d, %d queues", d.RxQueues(), len(d.queues))
	}

	// Frames on both queues; only queue 0 is read before queue 1 goes.
	raw := pr.PeerNS.MustRaw(pr.PeerIf)
	const n = 256
	for i := 0; i < n; i++ {
		raw.Send(drvtest.Frame(pr.DevMAC, pr.PeerMAC, i%64, uint32(i), 64))
	}
	time.Sleep(200 * time.Millisecond)
	got, _ := drvtest.Collect(d, []int{0}, n, 300*time.Millisecond)
	if len(got) == 0 || len(got) == n {
		t.Fatalf("queue 0 received %d of %d: the frames must reach both queues", len(got), n)
	}
	if ch, _, err = reconf(with(1, nil), false); err != nil {
		t.Fatal(err)
	}
	ch.Apply()
	if err := ch.Finish(); err != nil {
		t.Fatal(err)
	}
	stat := func(name string) uint64 {
		for _, s := range d.Stats() {
			if s.Name == name {
				return s.Value
			}
		}
		t.Fatalf("no counter %s", name)
		return 0
	}
	if d.RxQueues() != 1 || len(d.retired) != 1 || !d.retired[0].isClosed() {
		t.Fatalf("after 2 → 1: RxQueues %d, %d retired", d.RxQueues(), len(d.retired))
	}
	if rx, removed := stat("rx_packets"), stat("rx_dropped_queue_removed"); rx != uint64(len(got)) || removed != uint64(n-len(got)) {
		t.Fatalf("rx_packets %d, rx_dropped_queue_removed %d; want %d and %d", rx, removed, len(got), n-len(got))
	}

	// Back to 2: queue 1 binds a new socket and receives.
	if ch, _, err = reconf(with(2, nil), false); err != nil {
		t.Fatalf("1 → 2: %v", err)
	}
	ch.Apply()
	if err := ch.Finish(); err != nil {
		t.Fatal(err)
	}
	if d.RxQueues() != 2 || len(d.txq) != 2 {
		t.Fatalf("after 1 → 2: RxQueues %d, TX for %d workers", d.RxQueues(), len(d.txq))
	}
	for i := 0; i < n; i++ {
		raw.Send(drvtest.Frame(pr.DevMAC, pr.PeerMAC, i%64, uint32(1000+i), 64))
	}
	got, per := drvtest.Collect(d, []int{0, 1}, n, 3*time.Second)
	if len(got) != n || per[1] == 0 {
		t.Fatalf("after 1 → 2: received %d of %d, per queue %v", len(got), n, per)
	}
}

// TestRetiredQueueLateCompletions: frames a removed queue sent whose
// completions the kernel posts after the reload stopped waiting for them
// (on a veth, when the receiving host has taken them, which a loaded
// machine may delay past retire's 200 ms) are still counted in
// tx_packets, and the device's exit flush reaps them too.
func TestRetiredQueueLateCompletions(t *testing.T) {
	pr, c, d := openTwoQueues(t)
	raw := pr.PeerNS.MustRaw(pr.PeerIf)
	pool := packet.NewPool(256)
	const n = 64
	// Worker 1 sends on queue 1 and is not called again: nothing reaps
	// the completions on its path.
	d.Transmit(1, drvtest.Batch(pool, drvtest.Outgoing(pr, n)))
	if peer := drvtest.PeerCollect(raw, n, 3*time.Second); len(peer) != n {
		t.Fatalf("peer got %d of %d", len(peer), n)
	}
	var ch drivers.WorkerChange
	if err := pr.DevNS.Do(func() (err error) {
		n := *c
		n.Queues = 1
		ch, _, err = d.Reconfigure(&n, false)
		return err
	}); err != nil {
		t.Fatal(err)
	}
	// The swap, without Finish's retire: as when retire's wait ended
	// before the kernel completed the frames.
	ch.Apply()
	if got := drvtest.WaitCounter(d, "tx_packets", n)["tx_packets"]; got != n {
		t.Fatalf("tx_packets %d after the removed queue's frames reached the peer; want %d", got, n)
	}
	if err := ch.Finish(); err != nil {
		t.Fatal(err)
	}
	if got := drvtest.Counters(d)["tx_packets"]; got != n {
		t.Fatalf("tx_packets %d after Finish; want %d", got, n)
	}
}

// openTwoQueues opens an afxdp device on both queues of a new veth pair,
// for two workers; it is closed when the test ends.
func openTwoQueues(t *testing.T) (*drvtest.Pair, *Config, *Device) {
	t.Helper()
	pr := drvtest.NewPair(t, 2)
	c := cfg(pr.DevIf, "auto")
	c.Queues = 2
	var d *Device
	if err := pr.DevNS.Do(func() (err error) {
		d, err = Open(c, drivers.OpenContext{Name: "dut", Workers: 2, Batch: 64})
		return err
	}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { d.Close() })
	return pr, c, d
}
