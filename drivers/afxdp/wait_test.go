package afxdp

import (
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/junction-dataplane/junction/drivers/internal/drvtest"
	"github.com/junction-dataplane/junction/packet"
)

// pollIn waits up to timeout for fd to be readable.
func pollIn(t *testing.T, fd int, timeout time.Duration) bool {
	t.Helper()
	p := []unix.PollFd{{Fd: int32(fd), Events: unix.POLLIN}}
	n, err := unix.Poll(p, int(timeout/time.Millisecond))
	if err != nil && err != unix.EINTR {
		t.Fatal(err)
	}
	return n > 0 && p[0].Revents&unix.POLLIN != 0
}

// TestRxFD: the queue's descriptor is readable while frames wait and not
// once they are received, and a frame arriving wakes a poll(2) on it.
func TestRxFD(t *testing.T) {
	pr := drvtest.NewPair(t, 1)
	d, err := openIn(t, pr.DevNS, cfg(pr.DevIf, "native"), 1)
	if err != nil {
		t.Fatal(err)
	}
	raw := drvtest.ReceiveAll(t, pr, d, 10) // the path works; all received
	fd := d.RxFD(0)
	if fd < 0 || d.RxFD(1) != -1 || d.RxFD(-1) != -1 {
		t.Fatalf("RxFD(0) = %d, RxFD(1) = %d, RxFD(-1) = %d", fd, d.RxFD(1), d.RxFD(-1))
	}
	b := packet.NewBatch(64)
	for d.Receive(0, b) > 0 {
		b.FreeAll()
	}
	if pollIn(t, fd, 0) {
		t.Fatal("descriptor readable with nothing to receive")
	}
	woke := make(chan time.Duration, 1)
	start := time.Now()
	go func() {
		pollIn(t, fd, 2*time.Second)
		woke <- time.Since(start)
	}()
	time.Sleep(20 * time.Millisecond)
	if err := raw.Send(drvtest.Frame(pr.DevMAC, pr.PeerMAC, 1, 77, 100)); err != nil {
		t.Fatal(err)
	}
	if w := <-woke; w > time.Second {
		t.Fatalf("poll(2) on the queue's descriptor did not wake on a frame (%v)", w)
	}
	got := 0
	for deadline := time.Now().Add(time.Second); got == 0 && time.Now().Before(deadline); {
		got = d.Receive(0, b)
	}
	b.FreeAll()
	if got != 1 {
		t.Fatalf("received %d frames after the wake, want 1", got)
	}
	if pollIn(t, fd, 0) {
		t.Fatal("descriptor still readable after the frame was received")
	}
}

// TestTxIdle: after a transmission has been kicked out, nothing waits on
// the TX ring; an unknown worker has nothing either.
func TestTxIdle(t *testing.T) {
	pr := drvtest.NewPair(t, 1)
	d, err := openIn(t, pr.DevNS, cfg(pr.DevIf, "native"), 1)
	if err != nil {
		t.Fatal(err)
	}
	pool := packet.NewPool(256)
	var out [][]byte
	for i := 0; i < 200; i++ {
		out = append(out, drvtest.Frame(pr.PeerMAC, pr.DevMAC, i, uint32(i), 64))
	}
	d.Transmit(0, drvtest.Batch(pool, out[:64]))
	idle := false
	for deadline := time.Now().Add(time.Second); !idle && time.Now().Before(deadline); {
		idle = d.TxIdle(0) // kicks what is left
	}
	if !idle {
		t.Fatal("TX ring never emptied under TxIdle's kicks")
	}
	if !d.TxIdle(5) || !d.TxIdle(-1) {
		t.Error("TxIdle of a worker the device does not know")
	}
}
