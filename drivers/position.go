package drivers

// RxPositioner is implemented by a device that can say how far each of its
// RX queues has been filled and read (AF_XDP: the RX ring's producer and
// consumer indices). FromDevice uses it to keep a flow in order when the
// sending host moves it from one RX queue to another: packets that
// arrived on the new queue wait until the old queue's reader has passed
// the position the old queue had reached when the move was seen (the rule
// of Linux's RFS, which moves a flow to another CPU only once the old
// CPU's backlog has passed the flow's last packet).
type RxPositioner interface {
	// RxPosition returns, for RX queue q, how many packets have been made
	// available to read so far (arrived) and how many its reader has taken
	// (taken), both counting modulo 2^32 from the queue's start. arrived
	// may be read by any goroutine; taken is meaningful only to the
	// queue's reader.
	RxPosition(q int) (arrived, taken uint32)
}
