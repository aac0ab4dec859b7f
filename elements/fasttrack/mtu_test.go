package fasttrack_test

import (
	"testing"

	"github.com/junction-dataplane/junction/drivers"
	"github.com/junction-dataplane/junction/elements"
	"github.com/junction-dataplane/junction/elements/conntrack"
	ct "github.com/junction-dataplane/junction/elements/conntrack/cttest"
	"github.com/junction-dataplane/junction/elements/elementtest"
	"github.com/junction-dataplane/junction/elements/fasttrack"
	"github.com/junction-dataplane/junction/packet"
)

type mtuDev struct {
	drivers.Device
	mtu int
}

func (d mtuDev) Info() drivers.Info { return drivers.Info{MTU: d.mtu} }

// mtuDevs lists its devices, as the pipeline's set does.
type mtuDevs map[string]drivers.Device

func (s mtuDevs) Device(name string) (drivers.Device, int, bool) { d, ok := s[name]; return d, 0, ok }
func (s mtuDevs) Queues(string, int) []int                       { return nil }
func (s mtuDevs) DeviceNames() []string {
	var n []string
	for k := range s {
		n = append(n, k)
	}
	return n
}

// TestLongerThanMTU: once a flow is fast-tracked, its packets that fit the
// smallest device MTU (1400 here) are hits; a batch holding a longer one
// goes to the slow path whole (where CheckMTU answers the long one), in
// order, and the long packet is counted.
func TestLongerThanMTU(t *testing.T) {
	pool := packet.NewPool(512)
	devs := mtuDevs{"lan": mtuDev{mtu: 1500}, "wan": mtuDev{mtu: 1400}, "gen": mtuDev{}}
	slowOut := &elementtest.Recorder{}
	learn, _, _ := build(t, pool, "FastTrackLearn", &fasttrack.LearnConfig{Outputs: 1}, slowOut)
	ctk, _, _ := build(t, pool, "Conntrack", &conntrack.Config{Capacity: 1024}, learn)
	fastOut := &elementtest.Recorder{}
	ft, fst, _ := buildWith(t, pool, devs, "FastTrack", &fasttrack.Config{After: 2, Policy: "either-direction", Outputs: 1}, ctk, fastOut)
	frame := func(payload int) []byte {
		return ct.Frame(ct.F{Proto: "udp", Src: "192.168.1.10", Dst: "198.51.100.20", Sport: 40000, Dport: 5000, Payload: payload})
	}
	fits, long := frame(1400-28), frame(1401-28) // IP lengths 1400 and 1401
	b := packet.NewBatch(64)
	push := func(frames ...[]byte) {
		b.Reset()
		for _, f := range frames {
			p := pool.Get()
			p.SetFrame(f)
			b.Add(p)
		}
		ft.Push(0, b)
	}
	for range 3 {
		push(fits)
	}
	if counter(fst, "fasttracked packets") != 1 {
		t.Fatalf("the flow is not fast-tracked after 3 packets: %d", counter(fst, "fasttracked packets"))
	}
	slow, fast := len(slowOut.Pkts), len(fastOut.Pkts)
	push(fits, long, fits)
	if len(fastOut.Pkts)-fast != 0 || len(slowOut.Pkts)-slow != 3 {
		t.Fatalf("fast %d, slow %d; want 0 and the 3 packets of the batch", len(fastOut.Pkts)-fast, len(slowOut.Pkts)-slow)
	}
	if len(slowOut.Pkts[slow+1].Data) != len(long) {
		t.Errorf("the slow path got the batch out of order")
	}
	if counter(fst, "slow: longer than the mtu") != 1 {
		t.Errorf("counters: %v", fst.Counters())
	}
	// The next batch without a long packet is fast again.
	push(fits, fits)
	if len(fastOut.Pkts)-fast != 2 {
		t.Errorf("after: fast %d, want 2", len(fastOut.Pkts)-fast)
	}
}

// BenchmarkFastTrackMTU is BenchmarkFastTrack's 640-flow case with and
// without devices that report an MTU: what the length check costs a hit
// (one compare per packet; no packet is longer here).
func BenchmarkFastTrackMTU(b *testing.B) {
	for _, c := range []struct {
		name string
		devs elements.DeviceSet
	}{{"mtu=none", nil}, {"mtu=1500", mtuDevs{"lan": mtuDev{mtu: 1500}, "wan": mtuDev{mtu: 1500}}}} {
		b.Run(c.name, func(b *testing.B) {
			const flows = 640
			pool := packet.NewPool(1024)
			ft, fst, _, _ := natChainWith(b, pool, c.devs, flows*2)
			batch := packet.NewBatch(64)
			warmFlows(ft, pool, batch, flows)
			h0 := counter(fst, "hits")
			b.ReportAllocs()
			pkts := timeArena(b, ft, pool, batch, flows)
			if hits := counter(fst, "hits") - h0; hits < uint64(pkts)*99/100 {
				b.Errorf("%d hits of %d packets", hits, pkts)
			}
		})
	}
}
