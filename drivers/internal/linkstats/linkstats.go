package linkstats

import (
	"sync"

	"github.com/junction-dataplane/junction/drivers"
	"github.com/junction-dataplane/junction/drivers/internal/nlink"
)

// Counter names.
const (
	RxDropped      = "link_rx_dropped"
	TxDropped      = "link_tx_dropped"
	RxMissedErrors = "link_rx_missed_errors"
	PeerTxDropped  = "link_peer_tx_dropped"
)

// Names lists the counters Append adds, in order.
var Names = []string{RxDropped, TxDropped, RxMissedErrors, PeerTxDropped}

// Accumulator turns a kernel counter read now and then into a count since
// its first reading. A reading below the previous one means the kernel's
// counter was reset (a driver reset, or a socket statistic that resets on
// read): the new reading counts in full.
type Accumulator struct {
	last, total uint64
	started     bool
}

// Start sets the baseline (the reading at open).
func (a *Accumulator) Start(v uint64) { a.last, a.started = v, true }

// Add takes a new reading and returns the count since Start.
func (a *Accumulator) Add(v uint64) uint64 {
	switch {
	case !a.started:
		a.last, a.started = v, true
	case v >= a.last:
		a.total += v - a.last
		a.last = v
	default:
		a.total += v
		a.last = v
	}
	return a.total
}

// AddDelta adds a count that the kernel reset when it was read
// (PACKET_STATISTICS) and returns the total.
func (a *Accumulator) AddDelta(d uint64) uint64 {
	a.total += d
	return a.total
}

// Total is the count so far.
func (a *Accumulator) Total() uint64 { return a.total }

// Reader reads one interface's counters. Its methods are safe for
// concurrent use (the stats endpoint and the rate lines may ask at once).
type Reader struct {
	mu     sync.Mutex
	nl     *nlink.Conn // nil once closed
	index  int
	peer   bool // a veth whose peer could be read at open
	peerNS int
	peerIx int

	rxDropped, txDropped, rxMissed, peerTxDropped Accumulator
}

// Open starts counting on interface index through nl, a socket opened in
// the interface's namespace; the Reader owns nl from now on. A failure to
// read the counters is not fatal: the counters then stay 0.
func Open(nl *nlink.Conn, index int) *Reader {
	r := &Reader{nl: nl, index: index}
	lc, err := nl.Counters(-1, index)
	if err != nil {
		return r
	}
	r.rxDropped.Start(lc.Stats.RxDropped)
	r.txDropped.Start(lc.Stats.TxDropped)
	r.rxMissed.Start(lc.Stats.RxMissedErrors)
	if lc.Veth && lc.PeerIndex > 0 {
		if pc, err := nl.Counters(lc.PeerNetnsID, lc.PeerIndex); err == nil {
			r.peer, r.peerNS, r.peerIx = true, lc.PeerNetnsID, lc.PeerIndex
			r.peerTxDropped.Start(pc.Stats.TxDropped)
		}
	}
	return r
}

// read updates the accumulators from the kernel (r.mu held).
func (r *Reader) read() {
	if r.nl == nil {
		return
	}
	if lc, err := r.nl.Counters(-1, r.index); err == nil {
		r.rxDropped.Add(lc.Stats.RxDropped)
		r.txDropped.Add(lc.Stats.TxDropped)
		r.rxMissed.Add(lc.Stats.RxMissedErrors)
	}
	if r.peer {
		if pc, err := r.nl.Counters(r.peerNS, r.peerIx); err == nil {
			r.peerTxDropped.Add(pc.Stats.TxDropped)
		}
	}
}

// Append reads the counters and appends them to cs. After Close it
// appends the last values read.
func (r *Reader) Append(cs []drivers.Counter) []drivers.Counter {
	if r == nil {
		for _, n := range Names {
			cs = append(cs, drivers.Counter{Name: n})
		}
		return cs
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.read()
	return append(cs,
		drivers.Counter{Name: RxDropped, Value: r.rxDropped.Total()},
		drivers.Counter{Name: TxDropped, Value: r.txDropped.Total()},
		drivers.Counter{Name: RxMissedErrors, Value: r.rxMissed.Total()},
		drivers.Counter{Name: PeerTxDropped, Value: r.peerTxDropped.Total()})
}

// Close reads the counters a last time and closes the socket.
func (r *Reader) Close() error {
	if r == nil {
		return nil
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.nl == nil {
		return nil
	}
	r.read()
	err := r.nl.Close()
	r.nl = nil
	return err
}
