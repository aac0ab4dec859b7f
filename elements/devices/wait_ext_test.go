package devices_test

import (
	"testing"

	"github.com/junction-dataplane/junction/drivers"
	"github.com/junction-dataplane/junction/elements"
	"github.com/junction-dataplane/junction/elements/devices"
	"github.com/junction-dataplane/junction/elements/elementtest"
)

// waitDev is a fake device with descriptors per queue (RxWaiter) and a TX
// ring that may hold frames waiting for a kick (TxWaiter).
type waitDev struct {
	*fakeDev
	txBusy bool
	kicks  int
}

func (d *waitDev) RxFD(q int) int { return 100 + q }
func (d *waitDev) TxIdle(w int) bool {
	d.kicks++
	return !d.txBusy
}

type waitSet struct{ d *waitDev }

func (s waitSet) Device(string) (drivers.Device, int, bool) { return s.d, 0, true }
func (s waitSet) Queues(_ string, w int) []int {
	return fakeSet{s.d.fakeDev, 2}.Queues("lan", w)
}

// FromDevice offers the descriptors of the live queues its worker serves;
// ToDevice keeps the worker off them while frames wait on the TX ring; a
// device without descriptors makes FromDevice ask for a timed sleep.
func TestSleepers(t *testing.T) {
	dev := &waitDev{fakeDev: newFake(-1, -1, -1)}
	h := elementtest.New(t, "FromDevice", &devices.FromConfig{Device: "lan", Spread: "off"},
		&elementtest.Options{Worker: 0, Workers: 2, Devices: waitSet{dev}})
	dev.pool = h.Pool
	fds, mode := h.Element.(elements.Sleeper).PrepareSleep(nil)
	if mode != elements.SleepOnFDs || len(fds) != 2 || fds[0] != 100 || fds[1] != 102 {
		t.Errorf("worker 0 of 2, queues 0 and 2: fds %v mode %v", fds, mode)
	}

	td := elementtest.New(t, "ToDevice", &devices.Config{Device: "lan"},
		&elementtest.Options{Devices: waitSet{dev}}).Element.(elements.Sleeper)
	if _, mode := td.PrepareSleep(nil); mode != elements.SleepOnFDs {
		t.Errorf("idle TX ring: mode %v", mode)
	}
	dev.txBusy = true
	if _, mode := td.PrepareSleep(nil); mode != elements.SleepTimed || dev.kicks != 2 {
		t.Errorf("frames on the TX ring: mode %v after %d kicks, want SleepTimed after 2", mode, dev.kicks)
	}

	plain := newFake(-1)
	h2 := elementtest.New(t, "FromDevice", &devices.FromConfig{Device: "lan", Spread: "off"},
		&elementtest.Options{Devices: fakeSet{plain, 1}})
	plain.pool = h2.Pool
	if _, mode := h2.Element.(elements.Sleeper).PrepareSleep(nil); mode != elements.SleepTimed {
		t.Errorf("device without descriptors: mode %v, want SleepTimed", mode)
	}
}
