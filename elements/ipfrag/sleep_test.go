package ipfrag

import (
	"testing"

	"golang.org/x/sys/unix"

	"github.com/junction-dataplane/junction/elements"
	"github.com/junction-dataplane/junction/elements/elementtest"
)

// readableNow reports whether fd is readable without waiting.
func readableNow(t *testing.T, fd int) bool {
	t.Helper()
	pfd := []unix.PollFd{{Fd: int32(fd), Events: unix.POLLIN}}
	n, err := unix.Poll(pfd, 0)
	if err != nil {
		t.Fatal(err)
	}
	return n > 0
}

// A worker asleep past its tick is woken by a datagram another worker
// hands it (its Bell), does not go to sleep while one waits for it, and
// asks for a tick when its oldest datagram in reassembly times out.
func TestHandoffWakesSleepingOwner(t *testing.T) {
	hs, es := twoWorkers(t)
	if got := es[1].NextTick(0); got != elements.NoWake {
		t.Fatalf("nothing in reassembly: NextTick %d, want NoWake", got)
	}
	fds, mode := es[1].PrepareSleep(nil)
	if mode != elements.SleepOnFDs || len(fds) != 1 {
		t.Fatalf("PrepareSleep: %v %v", fds, mode)
	}
	if readableNow(t, fds[0]) {
		t.Fatal("the Bell is readable before any handoff")
	}
	d := ownedBy1(3000)
	hs[0].Push(0, split(d, 1480)...)
	if hs[0].Counter("handed off") != 1 {
		t.Fatal("worker 0 did not hand the datagram over")
	}
	if !readableNow(t, fds[0]) {
		t.Fatal("the handoff did not wake the sleeping owner")
	}
	es[1].Woke()
	if readableNow(t, fds[0]) {
		t.Fatal("Woke left the Bell readable")
	}
	// The datagram waits in the ring: no sleep until it is sent on.
	if _, mode := es[1].PrepareSleep(nil); mode != elements.SleepNot {
		t.Fatalf("a datagram waits for worker 1: PrepareSleep %v, want SleepNot", mode)
	}
	es[1].Woke()
	es[1].Tick(es[1].now())
	if got := len(frames(hs[1], 0)); got != 1 {
		t.Fatalf("worker 1 sent on %d datagrams, want 1", got)
	}

	// A first fragment alone: its datagram times out timeout after it came.
	fr := split(udpFrame(inside, outside, 7, 9, 7, 3000, nil), 1480)
	hs[0].Push(0, fr[0])
	want := es[0].t.slots[es[0].t.oldest].born + es[0].timeout
	if got := es[0].NextTick(0); got != want {
		t.Fatalf("one datagram in reassembly: NextTick %d, want %d", got, want)
	}
}

// A reload keeps the hub (the graph state's) and so the Bells: the old
// instances closing does not close the Bell the new ones sleep on, and the
// last instance to close closes it.
func TestBellSurvivesReload(t *testing.T) {
	st := elements.NewGraphState()
	build := func() []*Reassembler {
		var es []*Reassembler
		for w := range 2 {
			_, e := reassembler(t, nil, &elementtest.Options{Worker: w, Workers: 2, State: st, PoolSize: 256})
			es = append(es, e)
		}
		return es
	}
	old := build()
	cur := build() // the reload's instances, built while the old ones run
	if old[1].bell != cur[1].bell {
		t.Fatal("the reload's instance has a Bell of its own: a sender rings one the other sleeps without")
	}
	for _, e := range old {
		if err := e.Close(); err != nil {
			t.Fatalf("old instance: %v", err)
		}
	}
	fds, _ := cur[1].PrepareSleep(nil)
	if _, err := unix.FcntlInt(uintptr(fds[0]), unix.F_GETFD, 0); err != nil {
		t.Fatalf("the Bell was closed with the old instances: %v", err)
	}
	cur[1].Woke()
	h := cur[1].hub
	for _, e := range cur {
		if err := e.Close(); err != nil {
			t.Fatalf("new instance: %v", err)
		}
	}
	if h.bells[0] != nil || h.bells[1] != nil {
		t.Error("the last instance to close left its Bell open")
	}
}
