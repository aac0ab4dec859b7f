package fasttrack_test

import (
	"bytes"
	"testing"
	"time"

	"github.com/junction-dataplane/junction/elements"
	"github.com/junction-dataplane/junction/packet"
)

// TestOffload6: IPv6 UDP flows that take FastTrack's path are handed to
// the devices' fast path at the next tick, untranslated, with the slow
// path's hop-limit decrement and Ethernet header; the kernel's counts
// are folded back; a generation change takes them out; Close removes the
// rest.
func TestOffload6(t *testing.T) {
	r := newOffloadRig(t, func(pool *packet.Pool, learn elements.Element) elements.Element {
		hl, _, _ := build(t, pool, "DecHopLimit", nil, learn)
		return hl
	})
	ff, wan, lan, pool, slowOut, fastOut, ft, fst, tk, push := r.ff, r.wan, r.lan, r.pool, r.slowOut, r.fastOut, r.ft, r.fst, r.tk, r.push
	var frames [][]byte
	for i := range 4 {
		frames = append(frames, udp6(t, "2001:db8:2::2", "2001:db8:1::10", uint16(40000+i), 53, 64))
	}
	push(frames) // slow, learnt
	var ref [][]byte
	for _, p := range slowOut.Pkts {
		ref = append(ref, append([]byte(nil), p.Data...))
	}
	push(frames) // slow (after = 2)
	push(frames) // FastTrack: queued
	if ff.sets != 0 || len(fastOut.Pkts) != 4 {
		t.Fatalf("after the first fast round: %d installed, %d fast packets", ff.sets, len(fastOut.Pkts))
	}
	now := int64(time.Hour)
	tk.Tick(now)
	if len(ff.flows) != 4 || counter(fst, "offloaded flows") != 4 {
		t.Fatalf("%d flows installed (gauge %d), want 4", len(ff.flows), counter(fst, "offloaded flows"))
	}
	for _, fl := range ff.flows {
		i := int(fl.Sport - 40000)
		if i < 0 || i >= len(ref) {
			t.Fatalf("installed %+v", fl)
		}
		if fl.In != wan || fl.Out != lan || fl.Proto != 17 || fl.Src.String() != "2001:db8:2::2" || fl.Dst.String() != "2001:db8:1::10" ||
			fl.Dport != 53 || fl.NewSrc != fl.Src || fl.NewDst != fl.Dst || fl.NewSport != fl.Sport || fl.NewDport != fl.Dport ||
			fl.TTLDec != 1 || !bytes.Equal(fl.EthDst[:], ref[i][0:6]) || !bytes.Equal(fl.EthSrc[:], ref[i][6:12]) {
			t.Errorf("flow %d installed as %+v", i, fl)
		}
	}
	push(frames)
	tk.Tick(now + 1)
	if ff.sets != 4 {
		t.Errorf("%d SetFlow calls after more hits, want 4", ff.sets)
	}
	before := counter(fst, "fasttracked packets")
	for slot := range ff.flows {
		ff.counts[slot] = [2]uint64{5, 5 * 60}
	}
	tk.Tick(now + int64(time.Second))
	if got := counter(fst, "fasttracked packets") - before; got != 20 || counter(fst, "offloaded packets") != 20 {
		t.Errorf("fold: fasttracked +%d, offloaded %d, want 20 and 20", got, counter(fst, "offloaded packets"))
	}
	genOf(pool).Invalidate()
	tk.Tick(now + 3*int64(time.Second))
	if len(ff.flows) != 0 || counter(fst, "offloaded flows") != 0 || counter(fst, "offload ended") != 4 {
		t.Errorf("after Invalidate: %d flows in the kernel, gauge %d, ended %d", len(ff.flows), counter(fst, "offloaded flows"), counter(fst, "offload ended"))
	}
	// Relearnt, installed again; Close takes them out.
	push(frames)
	push(frames)
	tk.Tick(now + 4*int64(time.Second))
	if len(ff.flows) != 4 {
		t.Fatalf("after relearning: %d flows installed, want 4", len(ff.flows))
	}
	if err := ft.(elements.Closer).Close(); err != nil {
		t.Fatal(err)
	}
	if len(ff.flows) != 0 {
		t.Errorf("after Close: %d flows left in the kernel", len(ff.flows))
	}
}
