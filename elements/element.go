package elements

import "github.com/junction-dataplane/junction/packet"

// Element processes batches of packets. It is the whole required contract.
//
// Push receives batch b on input port in. When Push returns, the element has
// disposed of every packet in b: passed it on through one of its Outputs,
// dropped it (Stats.Drop) or kept it (a held packet, released later or on
// Close). The *Batch itself belongs to the caller, who reuses it: an element
// that keeps packets copies the pointers, never the batch.
type Element interface {
	Push(in int, b *packet.Batch)
}

// Source is an element that brings packets into the graph (FromDevice). The
// worker calls Poll in its loop; Poll receives at most one batch, pushes it
// downstream and returns how many packets it received.
type Source interface {
	Element
	Poll() int
	// Drained reports that the source is finite and has nothing more to
	// give (a pcap file read to the end, a gen device with a count reached).
	Drained() bool
}

// Closer is an element holding resources or packets that must be released
// when the pipeline stops (e.g. packets queued for ARP resolution).
type Closer interface {
	Close() error
}

// Ticker is an element with periodic work (ageing, retransmitting ARP
// requests, flushing). The worker calls Tick about every millisecond with
// the current monotonic time in nanoseconds, between batches.
type Ticker interface {
	Tick(now int64)
}
