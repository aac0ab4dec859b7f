package gen

import "github.com/junction-dataplane/junction/drivers"

// A reload that changes the number of workers keeps a gen device open
// (drivers.WorkerResizer): its queues, their generators and sequence
// numbers carry on; only the per-worker TX counters follow the count, those
// of removed workers added to worker 0's so that the totals continue.

var _ drivers.WorkerResizer = (*Device)(nil)

// ResizeWorkers implements drivers.WorkerResizer.
func (d *Device) ResizeWorkers(n int) (drivers.WorkerChange, error) {
	return &txResize{d: d, tx: make([]txCounter, max(n, 1))}, nil
}

type txResize struct {
	d  *Device
	tx []txCounter
}

func (c *txResize) Apply() {
	d := c.d
	d.txMu.Lock()
	defer d.txMu.Unlock()
	for i := range d.tx {
		to := &c.tx[0]
		if i < len(c.tx) {
			to = &c.tx[i]
		}
		to.pkts.Add(d.tx[i].pkts.Load())
		to.bytes.Add(d.tx[i].bytes.Load())
	}
	d.tx = c.tx
}

func (c *txResize) Abort()        {}
func (c *txResize) Finish() error { return nil }
