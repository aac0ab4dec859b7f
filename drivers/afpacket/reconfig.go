package afpacket

import (
	"fmt"

	"github.com/junction-dataplane/junction/conf"
	"github.com/junction-dataplane/junction/drivers"
	"github.com/junction-dataplane/junction/packet"
)

// A reload that raises an afpacket device's queues key keeps the device
// open (drivers.Reconfigurer): the added RX sockets are opened and join
// the device's fanout group before the swap (a device opened with one
// socket has no group yet: its socket and the new ones form one). From
// the join on, the kernel spreads the flows over the larger group: the
// flows that move to a new socket wait in its ring until the new graph's
// workers read it after the swap, and none is lost or read twice. A
// reload that lowers it closes the sockets above the new count at the
// swap, while every worker is parked: a socket leaves a fanout group only
// by being closed, so what its ring still holds is handed back to the
// kernel unread and counted in rx_dropped_queue_removed, and from the
// close on the remaining members take over its flows.
// Any other key (interface, frames, block_size; fastpath, local_rate and
// local_burst, the fast path's) is the sockets' or the TC program's own:
// a reload that changes one closes the device and opens it again.

var _ drivers.Reconfigurer = (*Device)(nil)

// Reconfigure implements drivers.Reconfigurer.
func (d *Device) Reconfigure(cfg any, dry bool) (drivers.WorkerChange, string, error) {
	c, ok := cfg.(*Config)
	if !ok {
		return nil, "", fmt.Errorf("afpacket: config is %T, want *afpacket.Config", cfg)
	}
	if err := c.Validate(); err != nil {
		return nil, "", err
	}
	if c.Interface != d.cfg.Interface || c.Frames != d.cfg.Frames || c.BlockSize != d.cfg.BlockSize || c.fastPathKey() != d.cfg.fastPathKey() ||
		c.LocalRate != d.cfg.LocalRate || c.LocalBurst != d.cfg.LocalBurst {
		return nil, "", drivers.ErrReopen
	}
	cur := len(d.rx)
	nq := c.Queues
	if nq == 0 {
		// One per worker: the count the device was opened for, as a
		// change of workers keeps the RX sockets.
		nq = cur
	}
	switch {
	case nq == cur:
		return drivers.NoWorkerChange{}, fmt.Sprintf("queues %d, kept open", cur), nil
	}
	summary := fmt.Sprintf("queues %d → %d, kept open, reconfigured", cur, nq)
	if dry {
		return nil, summary, nil
	}
	if nq < cur {
		d.shrinkTo = nq
		return &rxShrink{d: d, queues: c.Queues, keep: nq}, summary, nil
	}
	g := &rxGrow{d: d, queues: c.Queues}
	for q := cur; q < nq; q++ {
		r, err := newRxQueue(d.ifindex, q, &d.cfg, d.typed)
		if err != nil {
			g.Abort()
			return nil, "", conf.Errorf("queues", "%s: added RX queue %d: %v", d.ifname, q, err)
		}
		g.added = append(g.added, r)
		if d.groups[0] == 0 {
			// The device's one queue joins first, creating the groups.
			if err = d.rx[0].join(d.groups); err != nil {
				g.Abort()
				return nil, "", conf.Errorf("queues", "%s: PACKET_FANOUT: %v", d.ifname, err)
			}
		}
		if err := r.join(d.groups); err != nil {
			g.Abort()
			return nil, "", conf.Errorf("queues", "%s: PACKET_FANOUT for added RX queue %d: %v", d.ifname, q, err)
		}
	}
	d.pending = g
	return g, summary, nil
}

// rxGrow is a prepared increase of an afpacket device's RX sockets.
type rxGrow struct {
	d      *Device
	queues int
	added  []*rxQueue
}

// Apply implements drivers.WorkerChange: every worker is parked.
func (g *rxGrow) Apply() {
	d := g.d
	d.mu.Lock()
	defer d.mu.Unlock()
	d.pending = nil
	d.rx = append(d.rx[:len(d.rx):len(d.rx)], g.added...)
	d.cfg.Queues = g.queues
	g.added = nil
}

// Abort implements drivers.WorkerChange. What an added socket received
// since it joined the group is read out of its ring and counted in
// rx_dropped_reload_aborted before it closes; its flows go back to the
// others.
func (g *rxGrow) Abort() {
	d := g.d
	d.pending = nil
	b := packet.NewBatch(packet.MaxBatch)
	for _, r := range g.added {
		for {
			n := r.receive(d.index, b)
			b.FreeAll()
			if n == 0 {
				break
			}
			d.abortDrops.Add(uint64(n))
		}
		r.close()
	}
	g.added = nil
}

// Finish implements drivers.WorkerChange.
func (g *rxGrow) Finish() error { return nil }

// rxShrink is a prepared decrease of an afpacket device's RX sockets.
type rxShrink struct {
	d            *Device
	queues, keep int
}

// Apply implements drivers.WorkerChange: every worker is parked, so no
// one reads the sockets being removed. Closing one is not a blocking
// call; its ring is emptied first and what it held counted.
func (s *rxShrink) Apply() {
	d := s.d
	d.mu.Lock()
	defer d.mu.Unlock()
	d.shrinkTo = 0
	removed := d.rx[s.keep:]
	d.rx = d.rx[:s.keep:s.keep]
	for _, r := range removed {
		d.rxRemoved.Add(uint64(r.discard()))
		r.readKernelStats()
		r.close()
	}
	d.retired = append(d.retired, removed...)
	d.cfg.Queues = s.queues
}

// Abort implements drivers.WorkerChange: nothing was changed.
func (s *rxShrink) Abort() { s.d.shrinkTo = 0 }

// Finish implements drivers.WorkerChange.
func (s *rxShrink) Finish() error { return nil }
