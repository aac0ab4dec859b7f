package drivers

import "errors"

// Changing the number of workers of a running router (a reload that
// changes [forwarder] workers). A device whose configuration is unchanged
// stays open across such a reload: its sockets, rings, UMEMs and XDP
// program are kept, and the driver is only told how many workers it now
// serves, because what a driver keeps per worker (a TX socket, a TX queue
// choice, TX counters) depends on it. The RX queue count is the device's,
// decided when it was opened, and does not change: RX queue q is served
// by worker q mod workers under either count, and FromDevice hands
// packets to their flow's owner when a worker serves no queue.
//
// What each driver does:
//   - gen: its per-worker TX counters follow the count (those of removed
//     workers are added to worker 0's, so totals continue); its queues, and
//     so its numbered sequences, are kept.
//   - pcap: nothing is per worker (one file, one lock per batch).
//   - afpacket: a TX socket is opened for each new worker before the swap
//     (an error fails the reload, nothing changed), and those of removed
//     workers are closed after it. The RX sockets of its fanout group are
//     kept: a socket cannot leave a fanout group without being closed,
//     and closing it would drop what its ring holds.
//   - afxdp: the sockets and UMEMs of every queue are kept; only the
//     choice of the queue each worker transmits on (worker w on queue
//     w mod queues) and which sockets are shared by more than one worker
//     (locked per batch, copy on TX) are recomputed.
//
// The RX queue count itself can change in a reload only for a device
// whose driver implements Reconfigurer (afxdp: its queues key): the
// device stays open, the added queues are opened before the swap and the
// removed ones closed after it (drivers/afxdp/reconfig.go). afpacket's
// RX sockets form one fanout group whose members leave it only by being
// closed: an afpacket device's queues can grow in place (new members join
// the group before the swap) or shrink (the members above the new count
// are closed at the swap, what their rings still hold counted in
// rx_dropped_queue_removed), and a reload that changes its other keys
// reopens it (it is not exclusive).
//
// A device whose driver does not implement WorkerResizer cannot serve
// another count in place, and a reload that changes the count while
// keeping such a device is refused (restart the forwarder).

// WorkerResizer is a device that can serve another number of workers
// without being reopened.
type WorkerResizer interface {
	// ResizeWorkers prepares the device for n workers while the current
	// ones still run on it: whatever can fail (a socket to open) is done
	// here, and an error fails the reload with nothing changed. It runs
	// on the reloading goroutine: sockets it opens belong to that
	// thread's network namespace, as at Open (the forwarder runs in the
	// interfaces' namespace).
	ResizeWorkers(n int) (WorkerChange, error)
}

// WorkerChange is a prepared change of a device's worker count.
type WorkerChange interface {
	// Apply switches the device to the new count. It is called while no
	// worker runs (every worker is parked between two rounds), must not
	// fail and must not block.
	Apply()
	// Abort releases what ResizeWorkers prepared: the reload failed
	// before Apply.
	Abort()
	// Finish releases what only the old count needed (removed workers'
	// TX sockets), once every worker runs the new graph.
	Finish() error
}

// NoWorkerChange is a WorkerChange with nothing to do, for devices with
// no per-worker state.
type NoWorkerChange struct{}

func (NoWorkerChange) Apply()        {}
func (NoWorkerChange) Abort()        {}
func (NoWorkerChange) Finish() error { return nil }

// Reconfigurer is a device that can take a new configuration of some of
// its keys without being reopened (a reload that changes them keeps it
// open, same instance). Reconfigure validates cfg (the driver's Config
// for the device's new keys) against the running device: an error, for a
// key that cannot change in place or a resource missing, fails the reload
// with nothing changed. With dry, it only validates and returns a nil
// change. Otherwise it prepares the change as ResizeWorkers does (what
// can fail is done now, on the reloading goroutine), and from then until
// Apply or Abort the device's RxQueues is the new count, so that the new
// graph is built for it; the old graph's workers keep serving the old
// queues. Apply is called with every worker parked, Finish after every
// worker runs the new graph. summary says what changes, for the report
// ("queues 2 → 1, kept open, reconfigured").
//
// A device of a driver that is not Exclusive may answer ErrReopen
// (wrapped or not): the change is not one it makes in place, and the
// reload opens a new device for the new keys as it does for drivers
// without Reconfigure. Any other error fails the reload.
type Reconfigurer interface {
	Reconfigure(cfg any, dry bool) (change WorkerChange, summary string, err error)
}

// ErrReopen is a Reconfigurer's answer for a change that reopening the
// device makes instead.
var ErrReopen = errors.New("reopen the device for these keys")
