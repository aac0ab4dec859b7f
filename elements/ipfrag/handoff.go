package ipfrag

import (
	"sync"

	"github.com/junction-dataplane/junction/elements/internal/pktring"
	"github.com/junction-dataplane/junction/internal/wakeup"
)

// The handoff of finished datagrams to the worker that owns their flow.
// Fragments hash without ports (packet.FlowHashFrame), so FromDevice brings
// every fragment of a datagram to one worker, chosen by addresses and
// protocol; the datagram's flow, once its ports are known, may belong to
// another. IPReassembler instances hand such datagrams over on a
// single-producer single-consumer ring per (sender, receiver) pair. Packet
// pools are single-threaded, so the receiver lends the sender empty
// datagram buffers of its own pool over a second ring (as FromDevice's
// spreading does); the sender copies the datagram into one and frees its
// own. Only finished, fragmented datagrams take this path, a few per
// thousand packets at most, so each ring operation publishes at once
// (pktring's Put and Take) rather than per batch.

// lendDepth is how many datagram buffers each worker lends each other
// worker: enough for a burst of fragmented datagrams between two polls.
const lendDepth = 16

// ringSlots is the size of each ring: twice what a receiver lends, so
// that a datagram ring never refuses what a sender puts. A receiver tops
// up the buffers it lends a sender only while those lent and those handed
// back (its two rings' counts) are fewer than lendDepth; the sender may
// hold one more between its take and its put, so at most lendDepth+1 of
// the receiver's buffers are ever on their way.
const ringSlots = 2 * lendDepth

// hub is what the instances of one IPReassembler share across workers.
type hub struct {
	workers int
	data    [][]*pktring.Ring // data[s][r]: datagrams from worker s to worker r
	lend    [][]*pktring.Ring // lend[s][r]: empty buffers of r's pool lent to s
	// bells[r] wakes worker r when it sleeps past its tick. The hub
	// outlives a reload (the graph state keeps it), and so does the Bell:
	// the instances of worker r hold it (acquire, release), the first
	// makes it, the last to close closes it. Senders read bells[r]
	// without the lock: it is set before any worker runs the graph that
	// made it, and cleared only when no instance of r runs.
	mu    sync.Mutex
	bells []*wakeup.Bell
	refs  []int
}

// acquire returns worker r's Bell, made by its first holder.
func (h *hub) acquire(r int) (*wakeup.Bell, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.bells[r] == nil {
		b, err := wakeup.New()
		if err != nil {
			return nil, err
		}
		h.bells[r] = b
	}
	h.refs[r]++
	return h.bells[r], nil
}

// release lets go of worker r's Bell; the last holder closes it.
func (h *hub) release(r int) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.refs[r]--; h.refs[r] > 0 || h.bells[r] == nil {
		return nil
	}
	b := h.bells[r]
	h.bells[r] = nil
	return b.Close()
}

func newHub(workers int) *hub {
	h := &hub{workers: workers, data: make([][]*pktring.Ring, workers), lend: make([][]*pktring.Ring, workers),
		bells: make([]*wakeup.Bell, workers), refs: make([]int, workers)}
	for s := range workers {
		h.data[s] = make([]*pktring.Ring, workers)
		h.lend[s] = make([]*pktring.Ring, workers)
		for r := range workers {
			if r != s {
				h.data[s][r], h.lend[s][r] = pktring.New(ringSlots), pktring.New(ringSlots)
			}
		}
	}
	return h
}
