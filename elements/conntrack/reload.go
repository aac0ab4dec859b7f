package conntrack

import (
	"fmt"

	"github.com/junction-dataplane/junction/elements"
)

// A reload that keeps Conntrack (same name) keeps each worker's flow table
// and every flow in it, NAT bindings included (they are the flows' reply
// tuples). The table is the same object in both generations (one per
// worker of the router, found in the router's graph state by the
// worker's number: Acquire), so DNAT, SNAT and FastTrack of the
// new graph find it as the old ones did; TakeState applies the new
// configuration to it between two rounds: new timeouts apply from the next
// packet of each flow; a new capacity moves the flows into a table of the
// new size, assured ones first, and counts those that do not fit
// ("reload: capacity shrunk").

var _ elements.StateTaker = (*Conntrack)(nil)

// TakeState implements elements.StateTaker.
func (e *Conntrack) TakeState(old elements.Element) error {
	if old == nil {
		return nil // new in the reload: it configured its own table
	}
	o, ok := old.(*Conntrack)
	c := e.pending
	if !ok || c == nil {
		return fmt.Errorf("Conntrack: no running table to take")
	}
	e.pending = nil
	// The control socket may be listing flows through either instance
	// (Flows holds its listMu): a resize moves the entries and unmaps the
	// old memory, and the old instance lets go of the table.
	o.listMu.Lock()
	defer o.listMu.Unlock()
	e.listMu.Lock()
	defer e.listMu.Unlock()
	if o.t != e.t {
		return fmt.Errorf("Conntrack: the running instance's table is not this worker's")
	}
	// The old instance gives up its reference; its Close is then a no-op.
	o.t.Release()
	o.t = nil
	t := e.t
	t.timeouts = c.to
	if t.t6 != nil {
		// IPv6 flows are kept in the table of the size they had.
		t.t6.timeouts = c.to
	}
	resized := c.Capacity != t.Capacity()
	if resized {
		e.reloadDropped.Add(uint64(t.Resize(c.Capacity)))
	}
	if resized || c.TCPWindow != t.TCPWindow() {
		// Window state is per entry: kept flows start liberal, as after
		// a mid-stream pickup.
		t.SetTCPWindow(c.TCPWindow)
	}
	e.publish()
	return nil
}

// Resize moves every flow into a table of the new capacity (a reload that
// changed it) and returns how many did not fit. Assured flows go first, in
// their list order, then unassured ones from the newest, so that what a
// full table would evict first is what is left out. The fast-path rewrites
// and the flow cache are not carried: FastTrack learns them again from the
// next packets. It allocates: it runs between rounds, never per packet.
func (t *Table) Resize(capacity int) (dropped int) {
	var keep []Conn
	for _, l := range []int{1, 0} {
		var idx []uint32
		for i := t.lists[l].head; i != 0; i = t.conns[i].nxt {
			idx = append(idx, i)
		}
		if l == 0 {
			// Newest unassured first.
			for a, b := 0, len(idx)-1; a < b; a, b = a+1, b-1 {
				idx[a], idx[b] = idx[b], idx[a]
			}
		}
		for _, i := range idx {
			t.Sync(i)
			keep = append(keep, t.conns[i])
		}
	}
	t.configure(capacity, t.timeouts, t.now)
	now := t.now()
	created := t.Created
	for i := range keep {
		k := &keep[i]
		if i >= capacity {
			dropped++
			continue
		}
		if _, ok := t.recreate(k, now); !ok {
			dropped++
		}
	}
	t.Created = created // moved, not new
	return dropped
}

// ForEach calls f for every live flow, in index order. f may Delete the
// flow it is given. For reloads and tools, never per packet.
func (t *Table) ForEach(f func(idx uint32, c *Conn)) {
	for i := 1; i < len(t.conns); i++ {
		c := &t.conns[i]
		if c.Flags&flagLive != 0 {
			t.Sync(uint32(i))
			f(uint32(i), c)
		}
	}
}

// recreate inserts a copy of c, a flow taken from this table before it was
// resized or from another worker's table, as a live flow: its tuples,
// state, counters and expiry. The flow cache and the assured count are this
// table's own, so they are redone rather than copied. The flow is not
// counted as created: it was moved, not opened.
func (t *Table) recreate(c *Conn, now int64) (uint32, bool) {
	idx, ok := t.Create(&c.T[0], now)
	if !ok {
		return 0, false
	}
	t.Created--
	nc := &t.conns[idx]
	if c.T[1] != c.T[0].Inverse() {
		t.SetReply(idx, &c.T[1])
	}
	nc.Expires, nc.Packets, nc.Bytes, nc.State, nc.Dev = c.Expires, c.Packets, c.Bytes, c.State, c.Dev
	nc.Flags = c.Flags&^(flagCached|FlagAssured) | flagLive
	if c.Flags&FlagAssured != 0 {
		t.SetAssured(idx)
	}
	return idx, true
}
