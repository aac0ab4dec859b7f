package ndp_test

import (
	"net/netip"
	"testing"
	"time"

	"github.com/junction-dataplane/junction/elements"
	"github.com/junction-dataplane/junction/elements/elementtest"
	"github.com/junction-dataplane/junction/elements/ndp"
)

// rebuild builds another NDPQuerier as a reload would, replacing h's
// instance (Previous), with a fresh shared slot: what the new graph's
// instance gets.
func rebuild(t *testing.T, h interface {
	Ctx() *elements.Context
}, old elements.Element, c *ndp.QuerierConfig, same bool) elements.Element {
	t.Helper()
	typ, _ := elements.Lookup("NDPQuerier")
	hc := h.Ctx()
	ctx := elements.NewContext("q", 0, 1, 64, hc.Outputs, hc.Stats, hc.Pool, hc.Devices, &elements.SharedSlot{})
	ctx.SetReloading(true)
	ctx.SetPrevious(elements.Previous{Element: old, Shared: ndp.TableOf(old), SameConfig: same})
	el, err := typ.New(c, ctx)
	if err != nil {
		t.Fatal(err)
	}
	return el
}

type harnessCtx struct{ c *elements.Context }

func (h harnessCtx) Ctx() *elements.Context { return h.c }

// TestReloadKeepsNeighbours: a reload with the same configuration keeps
// the neighbour table (a resolved neighbour stays resolved); another
// configuration starts a new one. The packets the old instance held are
// dropped by Retire, on its worker, and Close then frees nothing.
func TestReloadKeepsNeighbours(t *testing.T) {
	c := querierCfg()
	h := newQuerier(t, c)
	clk := useClock(h)
	h.PushVia(0, peerIP.String(), ip6Frame(t, "2001:db8:16::5"))
	h.Reset()
	clk.add(100 * time.Millisecond)
	h.Push(1, ndFrame{typ: 136, src: peerIP.String(), dst: ourIP.String(), target: peerIP.String(), flags: 0x60, lla: peerMAC}.bytes(t))
	h.Reset()

	kept := rebuild(t, harnessCtx{h.Context}, h.Element, c, true)
	if ndp.TableOf(kept) != ndp.TableOf(h.Element) {
		t.Fatal("same configuration: the neighbour table was not kept")
	}
	if st, _ := kept.(*ndp.Querier).Neighbor(peerIP); st == ndp.Incomplete || st == 0 {
		t.Errorf("kept neighbour in state %v", st)
	}
	c2 := querierCfg()
	c2.Timeout = 2 * c.Timeout
	if fresh := rebuild(t, harnessCtx{h.Context}, h.Element, c2, false); ndp.TableOf(fresh) == ndp.TableOf(h.Element) {
		t.Error("another configuration kept the old table")
	}

	// A packet held for an unresolved next hop: Retire drops it.
	h.PushVia(0, "2001:db8:2::99", ip6Frame(t, "2001:db8:16::7"))
	h.Reset()
	if n := h.Element.(elements.Retirer).Retire(); n != 1 {
		t.Errorf("Retire dropped %d packets, want the 1 held", n)
	}
	if err := h.Element.(elements.Closer).Close(); err != nil {
		t.Fatal(err)
	}
	h.CheckNoLeak()
}

// TestReloadKeepsAnnouncements: a reload that keeps NDPResponder on the
// same MAC and addresses does not probe (DAD) or announce again; one that
// adds an address starts over.
func TestReloadKeepsAnnouncements(t *testing.T) {
	h := newResponder(t)
	r := h.Element.(elements.Ticker)
	base := int64(time.Hour)
	for i := 0; i < 5; i++ { // DAD, then three rounds of announcements
		r.Tick(base + int64(i)*int64(time.Second))
	}
	if n := h.Counter("announcements"); n != 2+6 {
		t.Fatalf("%d packets at start, want 8", n)
	}
	h.Reset()
	typ, _ := elements.Lookup("NDPResponder")
	renew := func(dev elementtest.Device) elements.Element {
		hc := h.Context
		ctx := elements.NewContext("nr", 0, 1, 64, hc.Outputs, hc.Stats, hc.Pool, elementtest.Devices{"wan": dev}, &elements.SharedSlot{})
		ctx.SetReloading(true)
		ctx.SetPrevious(elements.Previous{Element: h.Element, SameConfig: true})
		el, err := typ.New(responderCfg(), ctx)
		if err != nil {
			t.Fatal(err)
		}
		if err := el.(elements.StateTaker).TakeState(h.Element); err != nil {
			t.Fatal(err)
		}
		return el
	}
	kept := renew(wanDev).(elements.Ticker)
	for i := 5; i < 10; i++ {
		kept.Tick(base + int64(i)*int64(time.Second))
	}
	if n := len(h.Outs[0].Frames()); n != 0 {
		t.Errorf("the kept responder sent %d frames after the reload, want none", n)
	}
	more := wanDev
	more.DevInfo.Addresses = append(append([]netip.Prefix(nil), wanDev.DevInfo.Addresses...), netip.MustParsePrefix("2001:db8:2::9/64"))
	fresh := renew(more).(elements.Ticker)
	fresh.Tick(base + 10*int64(time.Second))
	if ns, _, _ := solicitations(t, h.Outs[0].Frames()); len(ns) != 3 {
		t.Errorf("with an address added, %d DAD probes after the reload, want 3 (every address)", len(ns))
	}
}
