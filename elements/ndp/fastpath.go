package ndp

import (
	"net/netip"
	"sync/atomic"
	"time"

	"github.com/junction-dataplane/junction/drivers"
	"github.com/junction-dataplane/junction/elements"
	"github.com/junction-dataplane/junction/elements/internal/neighq"
	"github.com/junction-dataplane/junction/packet"
)

// staticLifetime is how long the fast path trusts a static neighbour:
// for the life of the process.
const staticLifetime = 100 * 365 * 24 * time.Hour

// fastHook copies neighbours into the device's in-kernel fast path
// (drivers.FastPathTable), as ARPQuerier does for IPv4: only REACHABLE
// ones, each for what remains of its reachable time, so that the kernel
// never forwards to a neighbour the cache would be probing (STALE, DELAY,
// PROBE): when the copy lapses, packets come back through the querier,
// whose probing confirms the neighbour and copies it again. table nil:
// the device has no fast path, and nothing is done.
type fastHook struct {
	table drivers.FastPathTable
	dev   drivers.Device
	errs  *atomic.Uint64
}

func newFastHook(dev drivers.Device, st *elements.Stats) fastHook {
	fp, ok := dev.(drivers.FastPath)
	if !ok {
		return fastHook{}
	}
	t := fp.FastPathTable()
	if t == nil {
		return fastHook{}
	}
	return fastHook{table: t, dev: dev, errs: st.Counter("fastpath errors")}
}

// static copies a static neighbour for the life of the process.
func (h fastHook) static(ip [16]byte, mac packet.MAC) error {
	if h.table == nil {
		return nil
	}
	return h.table.SetNeighbor(h.dev, netip.AddrFrom16(ip), mac, staticLifetime)
}

// sync brings the fast path's copy of a's entry in line with the cache,
// after a solicitation or advertisement about a. A system call, made
// only when something changes: a REACHABLE entry is copied when its MAC
// differs from the copy's or the copy is a quarter of the reachable
// time old (a neighbour that advertises often costs one call per
// timeout/4, not one per frame); an entry that is not REACHABLE and
// whose MAC differs from the copy's is withdrawn (the kernel must not go
// on forwarding to the old MAC).
func (h fastHook) sync(t *table, a *[16]byte, now int64) {
	n := t.find(a)
	if n == nil || n.static {
		return
	}
	mac, have := n.mac.Load(), n.fastMAC.Load()
	if n.State() != Reachable {
		if have != 0 && have != mac {
			if h.table.DeleteNeighbor(h.dev, netip.AddrFrom16(*a)) != nil {
				h.errs.Add(1)
				return
			}
			n.fastMAC.Store(0)
		}
		return
	}
	left := n.since.Load() + t.tm.Reachable - now
	if left <= 0 || have == mac && now-n.fastAt.Load() < t.tm.Reachable/4 {
		return
	}
	var m packet.MAC
	neighq.PutMAC(m[:], mac)
	if h.table.SetNeighbor(h.dev, netip.AddrFrom16(*a), m, time.Duration(left)) != nil {
		h.errs.Add(1)
		return
	}
	n.fastMAC.Store(mac)
	n.fastAt.Store(now)
}

// refreshSlots is how many cache slots one tick looks at for
// refreshFast: the whole table every 64 ticks (about 64 ms).
const refreshSlots = 64

// refreshFast keeps the kernel's copies from lapsing while it forwards.
// Traffic the kernel forwards never reaches this element, so nothing
// would confirm a neighbour in use: its reachable time would run out, the
// copy lapse, and the traffic fall back to the graph through STALE,
// DELAY (5 s) and PROBE before it is copied again. Like Linux's managed
// neighbours, a neighbour with a copy is re-confirmed in the last quarter
// of its reachable time with a unicast solicitation (at most one per
// RETRANS_TIMER); the solicited advertisement makes it REACHABLE again and
// renews the copy (sync). A neighbour that stops answering lapses as
// before. Called on one worker only.
func (q *Querier) refreshFast(now int64) {
	t := q.t
	sent := false
	for k := 0; k < refreshSlots; k++ {
		n := t.slots[q.refreshAt].Load()
		q.refreshAt = (q.refreshAt + 1) & (tableSlots - 1)
		if n == nil || n.static || n.fastMAC.Load() == 0 || n.State() != Reachable {
			continue
		}
		left := n.since.Load() + t.tm.Reachable - now
		if left <= 0 || left > t.tm.Reachable/4 || now-n.refreshed.Load() < t.tm.Retrans {
			continue
		}
		n.refreshed.Store(now)
		q.solicit(n.addr, n.mac.Load(), true)
		sent = true
	}
	if sent {
		q.outB.Flush()
	}
}
