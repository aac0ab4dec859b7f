package afpacket

import (
	"errors"

	"golang.org/x/sys/unix"

	"github.com/junction-dataplane/junction/conf"
	"github.com/junction-dataplane/junction/drivers"
)

// A reload that changes the number of workers keeps an afpacket device
// open (drivers.WorkerResizer). Each worker transmits on a socket of its
// own: those of new workers are opened before the swap (an error fails
// the reload, nothing changed) and those of removed workers closed after
// it, their counters added to worker 0's so that the totals continue. The
// RX sockets are kept, all of them: a socket cannot leave its fanout group
// without being closed, which would drop what its ring holds, and queue q
// is served by worker q mod workers under any count (FromDevice hands the
// packets of a worker that serves no queue to it).

var _ drivers.WorkerResizer = (*Device)(nil)

// ResizeWorkers implements drivers.WorkerResizer.
func (d *Device) ResizeWorkers(n int) (drivers.WorkerChange, error) {
	n = max(n, 1)
	c := &txResize{d: d, n: n}
	for w := len(d.tx); w < n; w++ {
		t, err := newTxSocket(d.ifindex)
		if err != nil {
			c.Abort()
			return nil, conf.Errorf("interface", "%s: TX socket for worker %d: %v", d.ifname, w, err)
		}
		t.maxFrame = d.tx[0].maxFrame // the interface's MTU as read at open, as every TX socket has
		c.added = append(c.added, t)
	}
	return c, nil
}

type txResize struct {
	d       *Device
	n       int
	added   []*txSocket // opened for new workers
	removed []*txSocket // closed by Finish
}

func (c *txResize) Apply() {
	d := c.d
	d.mu.Lock()
	defer d.mu.Unlock()
	if c.n < len(d.tx) {
		c.removed = append([]*txSocket(nil), d.tx[c.n:]...)
		for _, t := range c.removed {
			z := d.tx[0]
			z.pkts.Add(t.pkts.Load())
			z.bytes.Add(t.bytes.Load())
			z.dropped.Add(t.dropped.Load())
			z.errors.Add(t.errors.Load())
		}
		d.tx = append([]*txSocket(nil), d.tx[:c.n]...)
		return
	}
	d.tx = append(append([]*txSocket(nil), d.tx...), c.added...)
	c.added = nil
}

func (c *txResize) Abort() {
	for _, t := range c.added {
		unix.Close(t.fd)
	}
	c.added = nil
}

func (c *txResize) Finish() error {
	var errs []error
	for _, t := range c.removed {
		if err := unix.Close(t.fd); err != nil {
			errs = append(errs, err)
		}
	}
	c.removed = nil
	return errors.Join(errs...)
}
