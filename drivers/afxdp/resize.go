package afxdp

import "github.com/junction-dataplane/junction/drivers"

// A reload that changes the number of workers keeps an afxdp device open
// (drivers.WorkerResizer): every queue's socket, UMEM, fill and completion
// rings and the XDP program stay as they are, with the frames in flight in
// them. The queue count is the interface's (its channels, or the queues
// key), not the workers': only the worker → TX queue choice (worker w on
// queue w mod queues) and the sockets shared by more than one worker
// (locked per batch, copying on TX) are recomputed, while every worker is
// parked between two rounds. A socket that becomes shared keeps the
// frames it had sent without a copy: their completions return them to
// its RX pool under the socket's lock from then on, as its receives do.

var _ drivers.WorkerResizer = (*Device)(nil)

// ResizeWorkers implements drivers.WorkerResizer.
func (d *Device) ResizeWorkers(n int) (drivers.WorkerChange, error) {
	return &txqResize{d: d, n: max(n, 1)}, nil
}

type txqResize struct {
	d *Device
	n int
}

func (c *txqResize) Apply() {
	d := c.d
	d.mu.Lock()
	defer d.mu.Unlock()
	if len(d.queues) == 0 {
		return
	}
	d.txq = txQueues(d.queues, c.n)
}

func (c *txqResize) Abort()        {}
func (c *txqResize) Finish() error { return nil }

// txQueues maps each of workers to the queue it transmits on and marks the
// queues used by more than one worker as shared.
func txQueues(queues []*queue, workers int) []*queue {
	nq := len(queues)
	users := make([]map[int]bool, nq)
	for q := range users {
		users[q] = map[int]bool{q % workers: true}
	}
	txq := make([]*queue, workers)
	for w := range txq {
		q := w % nq
		txq[w] = queues[q]
		users[q][w] = true
	}
	for q, u := range users {
		queues[q].shared = len(u) > 1
	}
	return txq
}
