package fasttrack_test

import (
	"bytes"
	"github.com/junction-dataplane/junction/drivers/kfeature"
	"math/rand/v2"
	"os"
	"testing"

	"github.com/junction-dataplane/junction/drivers"
	"github.com/junction-dataplane/junction/drivers/afxdp/fastpath"
	"github.com/junction-dataplane/junction/elements"
	"github.com/junction-dataplane/junction/elements/elementtest"
	"github.com/junction-dataplane/junction/elements/fasttrack"
	"github.com/junction-dataplane/junction/internal/netns"
	"github.com/junction-dataplane/junction/packet"
)

// kernelFlows hands FastTrack's offloaded flows to a real fast-path
// program: every input device is ifindex 1 (what BPF_PROG_TEST_RUN gives
// as ingress), every output ifindex 5.
type kernelFlows struct {
	drivers.FastPathTable // routes and neighbours: not used (nil: they panic)
	t                     *fastpath.Tables
}

func (k *kernelFlows) conv(fl drivers.FastFlow) (fastpath.FlowKey, fastpath.FlowAction) {
	return fastpath.FlowKey{Ifindex: 1, Proto: fl.Proto, Src: fl.Src, Dst: fl.Dst, Sport: fl.Sport, Dport: fl.Dport},
		fastpath.FlowAction{Ifindex: 5, EthDst: fl.EthDst, EthSrc: fl.EthSrc, Src: fl.NewSrc, Dst: fl.NewDst,
			Sport: fl.NewSport, Dport: fl.NewDport, TTLDec: fl.TTLDec, ICMPType: fl.ICMPType, Gen: fl.Gen}
}
func (k *kernelFlows) SetFlow(fl drivers.FastFlow) (int, error) { return k.t.SetFlow(k.conv(fl)) }
func (k *kernelFlows) DeleteFlow(fl drivers.FastFlow, slot int) error {
	key, _ := k.conv(fl)
	return k.t.DeleteFlow(key, slot)
}
func (k *kernelFlows) FlowCounters(slot int) (uint64, uint64) { return k.t.FlowCounters(slot) }
func (k *kernelFlows) SetFlowGeneration(g uint32) error       { return k.t.SetFlowGeneration(g) }

// TestRandomEquivalenceXDP: the random traffic of TestRandomEquivalence,
// with FastTrack offloading to the real XDP program. Every packet the
// kernel forwards (BPF_PROG_TEST_RUN on the same frame) is byte for byte
// what the slow path alone made of it — the kernel's fast path, like
// FastTrack's, is the slow path in one step.
func TestRandomEquivalenceXDP(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root (BPF)")
	}
	kfeature.Require(t, fastpath.Features...)
	tabs, err := fastpath.NewTables(16, 16, 4096)
	if err != nil {
		t.Fatal(err)
	}
	defer tabs.Close()
	// The program redirects only to outputs in its device map, which holds
	// real devices: ifindex 5 (kernelFlows' output) is a veth made in a
	// namespace of the test's own.
	netns.RequireRoot(t)
	ns := netns.New(t).NS("fteq")
	ns.MustRun("ip", "link", "add", "o5", "index", "5", "type", "veth", "peer", "name", "p5", "index", "1005")
	if err := ns.Do(func() error { return tabs.AddEgress(5, true) }); err != nil {
		t.Fatal(err)
	}
	prog, err := fastpath.NewProgram(tabs, 1, [6]byte{2, 0, 0, 0, 0, 0xb}) // cttest frames' destination MAC
	if err != nil {
		t.Fatal(err)
	}
	defer prog.Close()
	kf := &kernelFlows{t: tabs}
	dev := &fpDev{name: "wan", fp: kf}
	devs := twoDevs{wan: dev, lan: &fpDev{name: "lan", fp: kf}}

	rng := rand.New(rand.NewPCG(5, 6))
	flows := randomFlows()
	fastPool, refPool := packet.NewPool(1024), packet.NewPool(1024)
	slowOut, fastOut, refOut := &elementtest.Recorder{}, &elementtest.Recorder{}, &elementtest.Recorder{}
	learn, _, _ := build(t, fastPool, "FastTrackLearn", &fasttrack.LearnConfig{Outputs: 1}, slowOut)
	ft, fst, _ := buildWith(t, fastPool, devs, "FastTrack",
		&fasttrack.Config{After: 2, Policy: "either-direction", Outputs: 1, Offload: []string{"wan"}}, slowChain(t, fastPool, learn), fastOut)
	ref := slowChain(t, refPool, refOut)
	tk := ft.(elements.Ticker)

	fb, rb := packet.NewBatch(64), packet.NewBatch(64)
	kernel, slow := 0, 0
	for round := range 100 {
		sent := randomBatch(rng, flows, fastPool, refPool, fb, rb)
		n := len(sent)
		// The kernel sees each frame first, with the flows installed so far.
		before, err := prog.Counters()
		if err != nil {
			t.Fatal(err)
		}
		outs := make([][]byte, n)
		for i, fr := range sent {
			_, out, err := prog.XDP().Program.Test(fr)
			if err != nil {
				t.Fatal(err)
			}
			outs[i] = out
		}
		after, _ := prog.Counters()
		ref.Push(0, rb)
		want := map[byte][]byte{}
		for _, q := range refOut.Pkts {
			want[q.Scratch[0]] = q.Data
		}
		fwd := 0
		for i, out := range outs {
			if bytes.Equal(out, sent[i]) {
				slow++
				continue
			}
			fwd++
			if !bytes.Equal(out, want[byte(i)]) {
				t.Fatalf("round %d, frame %x:\nkernel    %x\nslow path %x", round, sent[i], out, want[byte(i)])
			}
		}
		if uint64(fwd) != after.Forwarded-before.Forwarded {
			t.Fatalf("%d frames changed, the program counted %d forwarded", fwd, after.Forwarded-before.Forwarded)
		}
		if round == 61 && fwd != 0 {
			t.Fatalf("round %d: the kernel forwarded %d packets by entries of the generation before the Invalidate of round 60", round, fwd)
		}
		kernel += fwd
		// Then the graph (which learns and queues), and a tick (which
		// installs what FastTrack handled).
		ft.Push(0, fb)
		if round == 60 {
			// A route or NAT change: every installed entry must stop
			// applying at the next tick, before any is deleted.
			genOf(fastPool).Invalidate()
			genOf(refPool).Invalidate()
		}
		tk.Tick(int64(round+1) * 1e6)
		refOut.Reset()
		slowOut.Reset()
		fastOut.Reset()
	}
	if kernel < 1500 {
		t.Fatalf("only %d packets forwarded by the kernel (%d slow; FastTrack: %d offloaded flows)", kernel, slow, counter(fst, "offloaded flows"))
	}
	t.Logf("%d packets forwarded by the XDP program equal to the slow path's; %d to the graph; %d flow directions offloaded",
		kernel, slow, counter(fst, "offloaded flows"))
}
