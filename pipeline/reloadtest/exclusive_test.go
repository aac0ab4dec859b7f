package reloadtest

import (
	"strings"
	"testing"

	"github.com/junction-dataplane/junction/drivers"
	"github.com/junction-dataplane/junction/packet"
	"github.com/junction-dataplane/junction/pipeline"
)

// exclDev is a device of a driver that holds its interface exclusively
// (as afxdp does): it counts how many are open at once.
type exclDev struct{}

var exclOpen int

func (exclDev) RxQueues() int                   { return 1 }
func (exclDev) Receive(int, *packet.Batch) int  { return 0 }
func (exclDev) Drained(int) bool                { return false }
func (exclDev) Transmit(_ int, b *packet.Batch) { b.FreeAll() }
func (exclDev) Flush() error                    { return nil }
func (exclDev) Close() error                    { exclOpen--; return nil }
func (exclDev) Info() drivers.Info              { return drivers.Info{Name: "x", Driver: "testexcl"} }
func (exclDev) Stats() []drivers.Counter        { return nil }
func (exclDev) ResizeWorkers(int) (drivers.WorkerChange, error) {
	return drivers.NoWorkerChange{}, nil
}

type exclConfig struct {
	Ring int `toml:"ring"`
}

func init() {
	drivers.Register(drivers.Driver{
		Name: "testexcl", Exclusive: true,
		NewConfig: func() any { return &exclConfig{Ring: 1} },
		Open: func(any, drivers.OpenContext) (drivers.Device, error) {
			exclOpen++
			return exclDev{}, nil
		},
	})
}

func exclGraph(t *testing.T, workers int, ring string) *pipeline.Graph {
	t.Helper()
	g, err := pipeline.Parse("excl.toml", []byte(`[forwarder]
workers = `+string(rune('0'+workers))+`

[devices.x]
driver = "testexcl"
ring   = `+ring+`

[graph]
links = ["FromDevice(x) -> Discard"]
`))
	if err != nil {
		t.Fatal(err)
	}
	return g
}

// TestReloadRefusesExclusiveReopen: a reload that changes the keys of a
// device whose driver holds its interface exclusively (afxdp) is refused
// before anything is opened (opening it a second time would fail, or take
// the XDP program off the running one); the same device unchanged is kept
// open through a change of workers.
func TestReloadRefusesExclusiveReopen(t *testing.T) {
	exclOpen = 0
	r, err := pipeline.Build(exclGraph(t, 2, "1"), pipeline.Options{NoPin: true})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	_, err = r.ReloadGraph(exclGraph(t, 2, "2"), false)
	if err == nil || !strings.Contains(err.Error(), `excl.toml:4: device "x" (driver testexcl)`) || !strings.Contains(err.Error(), "restart") {
		t.Fatalf("reload with the device's keys changed: %v", err)
	}
	if exclOpen != 1 {
		t.Fatalf("%d devices open after the refused reload, want 1 (nothing opened)", exclOpen)
	}
	driveAll(t, r, func() (*pipeline.ReloadReport, error) { return r.ReloadGraph(exclGraph(t, 1, "1"), false) })
	if exclOpen != 1 || r.Workers() != 1 {
		t.Fatalf("after a change of workers: %d devices open, %d workers; want the device kept and 1 worker", exclOpen, r.Workers())
	}
}
