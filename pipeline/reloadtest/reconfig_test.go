package reloadtest

import (
	"errors"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/junction-dataplane/junction/drivers"
	"github.com/junction-dataplane/junction/packet"
	"github.com/junction-dataplane/junction/pipeline"
)

// recfgDev is a device of an exclusive driver that can change its queue
// count in place (drivers.Reconfigurer, as afxdp does).
type recfgDev struct {
	live      atomic.Int32 // queues served since the last Apply
	announced atomic.Int32 // RxQueues: the new count once prepared
	applying  atomic.Bool
	// bad counts Receive calls on a queue the device no longer has, or
	// while Apply runs (a worker not parked).
	bad             atomic.Int32
	polled          [4]atomic.Int64
	applies, finish atomic.Int32
}

var recfgOpen int

func (d *recfgDev) RxQueues() int { return int(d.announced.Load()) }
func (d *recfgDev) Receive(q int, _ *packet.Batch) int {
	if d.applying.Load() || q >= int(d.live.Load()) {
		d.bad.Add(1)
	}
	d.polled[q].Add(1)
	return 0
}
func (d *recfgDev) Drained(int) bool                { return false }
func (d *recfgDev) Transmit(_ int, b *packet.Batch) { b.FreeAll() }
func (d *recfgDev) Flush() error                    { return nil }
func (d *recfgDev) Close() error                    { recfgOpen--; return nil }
func (d *recfgDev) Info() drivers.Info              { return drivers.Info{Name: "x", Driver: "testrecfg"} }
func (d *recfgDev) Stats() []drivers.Counter        { return nil }
func (d *recfgDev) ResizeWorkers(int) (drivers.WorkerChange, error) {
	return drivers.NoWorkerChange{}, nil
}

func (d *recfgDev) Reconfigure(cfg any, dry bool) (drivers.WorkerChange, string, error) {
	c := cfg.(*recfgConfig)
	if c.Ring != 1 {
		return nil, "", errors.New("keys [ring] change: only queues can change")
	}
	cur := int(d.live.Load())
	if dry {
		return nil, "queues changed", nil
	}
	d.announced.Store(int32(c.Queues))
	return &recfgChange{d: d, to: c.Queues, from: cur}, "queues changed", nil
}

type recfgChange struct {
	d        *recfgDev
	from, to int
}

func (c *recfgChange) Apply() {
	c.d.applying.Store(true)
	time.Sleep(2 * time.Millisecond) // a worker still polling would be seen
	c.d.live.Store(int32(c.to))
	c.d.applies.Add(1)
	c.d.applying.Store(false)
}
func (c *recfgChange) Abort()        { c.d.announced.Store(int32(c.from)) }
func (c *recfgChange) Finish() error { c.d.finish.Add(1); return nil }

type recfgConfig struct {
	Queues int `toml:"queues"`
	Ring   int `toml:"ring"`
}

var recfgLast *recfgDev

func init() {
	drivers.Register(drivers.Driver{
		Name: "testrecfg", Exclusive: true,
		NewConfig: func() any { return &recfgConfig{Ring: 1} },
		Open: func(cfg any, _ drivers.OpenContext) (drivers.Device, error) {
			recfgOpen++
			d := &recfgDev{}
			d.live.Store(int32(cfg.(*recfgConfig).Queues))
			d.announced.Store(int32(cfg.(*recfgConfig).Queues))
			recfgLast = d
			return d, nil
		},
	})
}

func recfgGraph(t *testing.T, workers, queues int, ring string) *pipeline.Graph {
	t.Helper()
	g, err := pipeline.Parse("recfg.toml", []byte(`[forwarder]
workers = `+string(rune('0'+workers))+`

[devices.x]
driver = "testrecfg"
queues = `+string(rune('0'+queues))+`
ring   = `+ring+`

[graph]
links = ["FromDevice(x) -> Discard"]
`))
	if err != nil {
		t.Fatal(err)
	}
	return g
}

// TestReloadReconfiguresQueues: a reload that changes the queue count of a
// device of an exclusive driver that implements drivers.Reconfigurer keeps
// the same device open, applies the change with every worker parked (no
// Receive while Apply runs, none on a removed queue after it), builds the
// new graph for the new count (the added queue is polled), finishes it
// after the swap; the dry run says so, and a key the driver cannot change
// in place is refused with the device's location and nothing changed.
func TestReloadReconfiguresQueues(t *testing.T) {
	recfgOpen = 0
	r, err := pipeline.Build(recfgGraph(t, 2, 2, "1"), pipeline.Options{NoPin: true})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	dev := recfgLast
	rounds := func(n int) {
		for i := 0; i < n; i++ {
			for w := 0; w < r.Workers(); w++ {
				r.Round(w)
			}
		}
	}
	rounds(10)

	rep, err := r.ReloadGraph(recfgGraph(t, 2, 1, "1"), true)
	if err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	rep.WriteText(&b)
	if !strings.Contains(b.String(), "device reconfigured") || !strings.Contains(b.String(), "queues changed") || strings.Contains(b.String(), "device opened") {
		t.Fatalf("dry run report:\n%s", b.String())
	}
	if dev.announced.Load() != 2 {
		t.Fatal("the dry run changed the device")
	}

	_, err = r.ReloadGraph(recfgGraph(t, 2, 1, "2"), false)
	if err == nil || !strings.Contains(err.Error(), `recfg.toml:4: device "x" (driver testrecfg)`) || !strings.Contains(err.Error(), "ring") {
		t.Fatalf("reload changing a key that cannot change in place: %v", err)
	}

	for _, step := range []struct{ workers, queues int }{{2, 1}, {1, 2}, {2, 2}, {2, 1}, {2, 2}} {
		driveAll(t, r, func() (*pipeline.ReloadReport, error) {
			return r.ReloadGraph(recfgGraph(t, step.workers, step.queues, "1"), false)
		})
		before := dev.polled[1].Load()
		rounds(10)
		if recfgOpen != 1 || recfgLast != dev {
			t.Fatalf("%+v: %d devices open; want the one device kept", step, recfgOpen)
		}
		if got := int(dev.live.Load()); got != step.queues {
			t.Fatalf("%+v: device serves %d queues", step, got)
		}
		if polled := dev.polled[1].Load() > before; polled != (step.queues == 2) {
			t.Fatalf("%+v: queue 1 polled after the reload: %v", step, polled)
		}
	}
	if n := dev.bad.Load(); n != 0 {
		t.Fatalf("%d receives on a removed queue or while Apply ran", n)
	}
	if a, f := dev.applies.Load(), dev.finish.Load(); a != f || a < 4 {
		t.Fatalf("%d Apply, %d Finish", a, f)
	}
}
