package configs_test

import (
	"encoding/binary"
	"os"
	"regexp"
	"sync"
	"testing"

	"github.com/junction-dataplane/junction/drivers"
	"github.com/junction-dataplane/junction/packet"
	"github.com/junction-dataplane/junction/pipeline"
)

// memDevice is an in-memory device for whole-graph tests: it receives the
// frames queued in it and keeps what is transmitted.
type memDevice struct {
	name   string
	index  int
	pool   *packet.Pool
	frames [][]byte
	next   int
	mu     sync.Mutex
	sent   [][]byte
}

var (
	memMu      sync.Mutex
	memDevices = map[string]*memDevice{}
	memInput   = map[string][][]byte{}
)

type memConfig struct{}

func init() {
	drivers.Register(drivers.Driver{
		Name:      "testmem",
		NewConfig: func() any { return &memConfig{} },
		Open: func(cfg any, ctx drivers.OpenContext) (drivers.Device, error) {
			memMu.Lock()
			defer memMu.Unlock()
			d := &memDevice{name: ctx.Name, index: ctx.Index, pool: packet.NewPool(256), frames: memInput[ctx.Name]}
			memDevices[ctx.Name] = d
			return d, nil
		},
		Doc: "in-memory test device",
	})
}

func (d *memDevice) RxQueues() int { return 1 }
func (d *memDevice) Receive(q int, b *packet.Batch) int {
	n := 0
	for !b.Full() && d.next < len(d.frames) {
		p := d.pool.Get()
		if p == nil {
			break
		}
		f := d.frames[d.next]
		d.next++
		if !p.SetFrame(f) {
			p.Free()
			continue
		}
		p.InDevice = uint16(d.index)
		b.Add(p)
		n++
	}
	return n
}
func (d *memDevice) Drained(q int) bool { return d.next >= len(d.frames) }
func (d *memDevice) Transmit(w int, b *packet.Batch) {
	d.mu.Lock()
	for _, p := range b.Pkts {
		d.sent = append(d.sent, append([]byte(nil), p.Data...))
		p.Free()
	}
	d.mu.Unlock()
	b.Reset()
}
func (d *memDevice) Flush() error             { return nil }
func (d *memDevice) Close() error             { return nil }
func (d *memDevice) Info() drivers.Info       { return drivers.Info{Name: d.name, Driver: "testmem"} }
func (d *memDevice) Stats() []drivers.Counter { return nil }

// routerOnMem is router.toml with its pcap devices replaced by testmem ones.
func routerOnMem(t testing.TB) []byte {
	src, err := os.ReadFile("router.toml")
	if err != nil {
		t.Fatal(err)
	}
	src = regexp.MustCompile(`(?m)^(read|write)\s*=.*$`).ReplaceAll(src, nil)
	return regexp.MustCompile(`"pcap"`).ReplaceAll(src, []byte(`"testmem"`))
}

// runMem runs the router graph over the given LAN frames and returns the
// LAN and WAN devices after the run.
func runMem(t testing.TB, graph []byte, lan [][]byte) (*memDevice, *memDevice) {
	memMu.Lock()
	memInput["lan"] = lan
	memInput["wan"] = nil
	memMu.Unlock()
	g, err := pipeline.Parse("router-mem.toml", graph)
	if err != nil {
		t.Fatal(err)
	}
	runToEnd(t, g, pipeline.Options{NoPin: true, Workers: 1})
	memMu.Lock()
	defer memMu.Unlock()
	return memDevices["lan"], memDevices["wan"]
}

// FuzzRouterGraph feeds random frames through the whole router graph: no
// panic, and every buffer comes back to its pool.
func FuzzRouterGraph(f *testing.F) {
	graph := routerOnMem(f)
	seed := make([]byte, 64)
	copy(seed, []byte{2, 0, 0, 0, 1, 1, 2, 0, 0, 0, 1, 2, 8, 0, 0x45, 0, 0, 50, 0, 0, 0, 0, 64, 17})
	binary.BigEndian.PutUint32(seed[26:], 0x0a010002)
	binary.BigEndian.PutUint32(seed[30:], 0x0a020005)
	f.Add(seed)
	f.Add([]byte{})
	f.Add(make([]byte, 13))
	arp := make([]byte, 42)
	copy(arp[12:], []byte{8, 6, 0, 1, 8, 0, 6, 4, 0, 1})
	f.Add(arp)
	f.Fuzz(func(t *testing.T, data []byte) {
		// One fuzz input becomes several frames: the input itself and
		// variants with an IPv4 header forced in, so that deep paths run.
		frames := [][]byte{data}
		if len(data) >= 34 {
			v := append([]byte(nil), data...)
			v[12], v[13], v[14] = 8, 0, 0x45
			frames = append(frames, v)
			w := append([]byte(nil), v...)
			w[22] = 1 // TTL 1: the ICMP error path
			frames = append(frames, w)
		}
		lan, wan := runMem(t, graph, frames)
		if n := lan.pool.Outstanding(); n != 0 {
			t.Fatalf("lan pool: %d buffers not returned", n)
		}
		if n := wan.pool.Outstanding(); n != 0 {
			t.Fatalf("wan pool: %d buffers not returned", n)
		}
	})
}
