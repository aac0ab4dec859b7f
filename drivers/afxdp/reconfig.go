package afxdp

import (
	"errors"
	"fmt"
	"time"

	"github.com/asavie/xdp"

	"github.com/junction-dataplane/junction/conf"
	"github.com/junction-dataplane/junction/drivers"
	"github.com/junction-dataplane/junction/drivers/internal/nlink"
	"github.com/junction-dataplane/junction/packet"
)

// A reload that changes the queues key keeps an afxdp device open
// (drivers.Reconfigurer): the XDP program, its attachment and the sockets
// and UMEMs of the queues that stay are untouched, with the frames in
// flight in them.
//
//   - Growth: the added queues' sockets and UMEMs are opened, their fill
//     rings filled and their sockets entered in the program's xsks map
//     before the swap (an error fails the reload and undoes them), so
//     frames the program redirects to them wait in their RX rings until
//     the new graph's workers read them. The interface must have that
//     many channels (ethtool -L) or the bind fails with a clear error.
//   - Shrink: at the swap (every worker parked) the removed queues leave
//     the xsks map, and from then on the program passes their frames to
//     the kernel, as it does for any queue above the queues key. After
//     the swap their TX rings are flushed and what their RX rings still
//     held is counted in rx_dropped_queue_removed (no worker reads them
//     any more), then the sockets are closed; a socket whose frames the
//     graph still holds (a packet waiting in an element) is closed with
//     the device instead, so that no packet points into unmapped memory.
//     Their counters stay in the device's totals.
//
// Every other key (interface, frames, ring, mode, fastpath, rss) is the
// socket's or the program's at open: a reload that changes one is refused
// (restart the forwarder).

var _ drivers.Reconfigurer = (*Device)(nil)

// Reconfigure implements drivers.Reconfigurer.
func (d *Device) Reconfigure(cfg any, dry bool) (drivers.WorkerChange, string, error) {
	c, ok := cfg.(*Config)
	if !ok {
		return nil, "", fmt.Errorf("afxdp: config is %T, want *afxdp.Config", cfg)
	}
	if err := c.Validate(); err != nil {
		return nil, "", err
	}
	if keys := changedKeys(&d.cfg, c); len(keys) > 0 {
		return nil, "", fmt.Errorf("keys %v change: only queues can change while the device stays open (the others are its sockets' or its XDP program's, set at open): restart the forwarder to change them", keys)
	}
	nq, err := d.wantQueues(c)
	if err != nil {
		return nil, "", err
	}
	cur := len(d.queues)
	if nq == cur {
		return drivers.NoWorkerChange{}, fmt.Sprintf("queues %d, kept open", cur), nil
	}
	summary := fmt.Sprintf("queues %d → %d, kept open, reconfigured", cur, nq)
	if dry {
		return nil, summary, nil
	}
	ch := &queueChange{d: d, from: cur, to: nq, queues: c.Queues}
	if nq > cur {
		if err := ch.open(); err != nil {
			ch.Abort()
			return nil, "", err
		}
	}
	d.pending = ch
	d.rxQueues.Store(int32(nq))
	return ch, summary, nil
}

// changedKeys lists the keys other than queues that differ.
func changedKeys(a, b *Config) []string {
	var keys []string
	add := func(differ bool, key string) {
		if differ {
			keys = append(keys, key)
		}
	}
	add(a.Interface != b.Interface, "interface")
	add(a.Frames != b.Frames, "frames")
	add(a.Ring != b.Ring, "ring")
	add(a.Mode != b.Mode, "mode")
	add(a.FastPath != b.FastPath, "fastpath")
	add(a.FastPathRedirect != b.FastPathRedirect, "fastpath_redirect")
	add(a.RSS != b.RSS, "rss")
	add(a.LocalRate != b.LocalRate, "local_rate")
	add(a.LocalBurst != b.LocalBurst, "local_burst")
	return keys
}

// wantQueues resolves the queues key as Open does, against the
// interface's channels now.
func (d *Device) wantQueues(c *Config) (int, error) {
	ch, chOK := nlink.Channels(d.ifname)
	nq := c.Queues
	if nq == 0 {
		nq = d.progQueues
		if chOK && ch < nq {
			nq = ch
		}
	}
	if nq > d.progQueues {
		return 0, conf.Errorf("queues", "%d queues, but interface %q has %d RX queues", nq, d.ifname, d.progQueues)
	}
	if chOK && nq > ch {
		return 0, conf.Errorf("queues", "%d queues, but interface %q has %d channels now (ethtool -L %s combined %d, or rx %d on a veth, first)", nq, d.ifname, ch, d.ifname, nq, nq)
	}
	return nq, nil
}

// queueChange is a prepared change of an afxdp device's queue count.
type queueChange struct {
	d        *Device
	from, to int
	queues   int      // the key's value
	added    []*queue // growth: opened, registered, not yet served
	removed  []*queue // shrink: out of the map at Apply
	unregErr error
}

// open opens and registers the added queues (from..to-1).
func (c *queueChange) open() error {
	d := c.d
	opts := xdp.SocketOptions{
		NumFrames: d.cfg.Frames, FrameSize: packet.BufSize,
		FillRingNumDescs: d.cfg.Ring, CompletionRingNumDescs: d.cfg.Ring,
		RxRingNumDescs: d.cfg.Ring, TxRingNumDescs: d.cfg.Ring,
	}
	for q := c.from; q < c.to; q++ {
		if err := d.releaseRetired(q); err != nil {
			return err
		}
		xsk, err := newSocket(d.ifindex, q, &opts, d.ZeroCopy)
		if err != nil {
			return conf.Errorf("queues", "%s: AF_XDP socket on added queue %d: %v", d.ifname, q, err)
		}
		qu, err := newQueue(q, xsk, d.cfg.Frames, d.cfg.Ring)
		if err != nil {
			xsk.Close()
			return conf.Errorf("queues", "%s: added queue %d: %v", d.ifname, q, err)
		}
		qu.maxFrame = drivers.MaxFrame(d.mtu) // as at open
		c.added = append(c.added, qu)
		qu.refill()
		if err := d.prog.Register(q, xsk.FD()); err != nil {
			return conf.Errorf("queues", "%s: registering added queue %d: %v", d.ifname, q, err)
		}
	}
	return nil
}

// Apply implements drivers.WorkerChange: every worker is parked.
func (c *queueChange) Apply() {
	d := c.d
	d.mu.Lock()
	defer d.mu.Unlock()
	d.pending = nil
	if c.to > c.from {
		d.queues = append(d.queues[:c.from:c.from], c.added...)
		c.added = nil
	} else {
		c.removed = d.queues[c.to:]
		d.queues = d.queues[:c.to:c.to]
		for _, q := range c.removed {
			if err := d.unregister(int(q.id)); err != nil {
				c.unregErr = errors.Join(c.unregErr, fmt.Errorf("%s: removing queue %d from the XDP program: %w", d.ifname, q.id, err))
			}
		}
		d.retired = append(d.retired, c.removed...)
	}
	d.txq = txQueues(d.queues, max(len(d.txq), 1))
	d.cfg.Queues = c.queues
	d.rxQueues.Store(int32(len(d.queues)))
}

// Abort implements drivers.WorkerChange: the reload failed before Apply.
func (c *queueChange) Abort() {
	d := c.d
	d.pending = nil
	d.rxQueues.Store(int32(len(d.queues)))
	for _, q := range c.added {
		d.unregister(int(q.id))
		q.retire()
		q.close()
	}
	c.added = nil
}

// Finish implements drivers.WorkerChange: every worker runs the new
// graph, none reads or transmits on the removed queues.
func (c *queueChange) Finish() error {
	err := c.unregErr
	for _, q := range c.removed {
		if q.retire() {
			if cerr := q.close(); cerr != nil {
				err = errors.Join(err, cerr)
			}
		}
	}
	c.removed = nil
	return err
}

// retire readies a queue no worker uses any more for closing: its TX ring
// is flushed (up to 200 ms), what its RX ring holds is counted in
// rxRemoved and its frames returned. It reports whether every RX frame is
// back with the socket (in its pool or with the kernel), so that closing
// it unmaps nothing a packet still points into.
//
// It runs while the new graph's workers run, none of which receives or
// transmits on q any more: the only other user of q's pools is a kept
// element releasing a packet it held across the swap (ARPQuerier's
// waiting packets). Then the frames are not all back and the socket stays
// open (closed with the device, or when a reload adds the queue again
// and finds them back); a release racing with the returns here can at
// worst miscount q's dead pool, which again only keeps the socket open.
func (q *queue) retire() bool {
	deadline := time.Now().Add(200 * time.Millisecond)
	for q.flushStep() && time.Now().Before(deadline) {
		time.Sleep(50 * time.Microsecond)
	}
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.xsk == nil {
		return false
	}
	q.reap()
	if n := q.xsk.NumReceived(); n > 0 {
		var bad uint64
		for _, desc := range q.xsk.Receive(n) {
			if idx := desc.Addr / packet.BufSize; idx < q.nrx {
				q.rx.Packet(int(idx)).Free()
			} else {
				bad++
			}
		}
		q.rxRemoved.Add(uint64(n) - bad)
		q.rxInvalid.Add(bad)
	}
	withKernel := q.ring - q.xsk.NumFreeFillSlots()
	return q.txOut == 0 && q.rx.Available()+withKernel == int(q.nrx)
}

// reapRetired counts the TX completions of a queue a reload removed whose
// socket stayed open: retire gives up waiting after 200 ms, and on a veth
// the kernel completes a frame only when the receiving host has taken it,
// which on a loaded machine can be later. No worker transmits on q any
// more, so reading its completion ring here races with no one.
func (q *queue) reapRetired() {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.xsk != nil && q.txOut > 0 {
		q.reap()
	}
}

// unregister takes queue q's socket out of the program: v0.3.3's
// Unregister deletes from its queue map first, an array (EINVAL), and
// then never reaches the XSKMAP, whose reference would keep the socket
// bound to the queue after its close. The queue map's entry is zeroed
// (the plain program then passes the queue's frames to the kernel; the
// fast path's ignores it) and the XSKMAP's deleted.
func (d *Device) unregister(q int) error {
	if err := d.prog.Queues.Put(uint32(q), uint32(0)); err != nil {
		return fmt.Errorf("queue map: %w", err)
	}
	if err := d.prog.Sockets.Delete(uint32(q)); err != nil {
		return fmt.Errorf("xsks map: %w", err)
	}
	return nil
}

// releaseRetired closes the socket a previous reload removed from queue
// q and left open because the graph still held its frames then: a queue
// binds one socket.
func (d *Device) releaseRetired(q int) error {
	for _, r := range d.retired {
		if int(r.id) != q || r.isClosed() {
			continue
		}
		if !r.retire() {
			return conf.Errorf("queues", "%s: queue %d: the graph still holds frames of the socket a previous reload removed from it (packets waiting in an element): reload again once they are sent", d.ifname, q)
		}
		if err := r.close(); err != nil {
			return conf.Errorf("queues", "%s: queue %d: closing the removed socket: %v", d.ifname, q, err)
		}
	}
	return nil
}

func (q *queue) isClosed() bool {
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.xsk == nil
}
