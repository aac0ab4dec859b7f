package afxdp

import (
	"errors"
	"io"
	"sync"
	"sync/atomic"
	"time"

	"github.com/cilium/ebpf/link"
	"golang.org/x/sys/unix"

	"github.com/junction-dataplane/junction/drivers/internal/nlink"
)

// What a device's programs can lose while it runs: another tool detaches
// its XDP program (ip link set dev X xdp off where it is attached through
// netlink, bpftool link detach where through a BPF link), or its TC
// ingress program. Without the XDP program the sockets receive nothing
// and the kernel's stack gets every frame; without the TC program the
// frames the fast path hands to TC climb the input's stack and are lost.
// watchAttach looks every attachPoll: a missing XDP program is attached
// again (the same program, whose socket map still holds the sockets: the
// traffic flows again as it did, through the graph for whatever the fast path
// does not take), a missing TC program turns the hand-off off (every
// output reached by XDP redirects, or the graph). Each is logged once per
// loss and counted (xdp_reattached, fastpath_tc_lost).
const attachPoll = 500 * time.Millisecond

// attachWatch is a device's watcher state.
type attachWatch struct {
	nl         *nlink.Conn // its own socket: d.nl is Close's
	progID     uint32      // the XDP program we attached
	tcID       uint32      // the TC program's ID, 0 without one
	stop, done chan struct{}
	stopOnce   sync.Once
	reattached atomic.Uint64
	tcLost     atomic.Uint64
}

// startAttachWatch starts watching the device's programs. Call it in the
// device's network namespace, after attach.
func (d *Device) startAttachWatch() {
	nl, err := nlink.Open()
	if err != nil {
		d.log.Printf("not watching its XDP program: %v", err)
		return
	}
	w := &attachWatch{nl: nl, stop: make(chan struct{}), done: make(chan struct{})}
	if info, err := d.prog.Program.Info(); err == nil {
		id, _ := info.ID()
		w.progID = uint32(id)
	}
	if d.tc != nil {
		if l, ok := d.tc.(link.Link); ok {
			if info, err := l.Info(); err == nil {
				w.tcID = uint32(info.Program)
			}
		}
	}
	d.watch = w
	go d.watchAttached(w)
}

// stopAttachWatch ends the watcher (before Close detaches anything).
func (d *Device) stopAttachWatch() {
	w := d.watch
	if w == nil {
		return
	}
	w.stopOnce.Do(func() {
		close(w.stop)
		<-w.done
		w.nl.Close()
	})
}

func (d *Device) watchAttached(w *attachWatch) {
	defer close(w.done)
	t := time.NewTicker(attachPoll)
	defer t.Stop()
	xdpLost, tcGone := false, false
	for {
		select {
		case <-w.stop:
			return
		case <-t.C:
		}
		if w.progID != 0 {
			l, err := w.nl.LinkByIndex(d.ifindex)
			if err != nil {
				continue // the device is going away: Close will say so
			}
			ours := l.XDPProgID == w.progID || l.XDPDrvProgID == w.progID || l.XDPSkbProgID == w.progID
			switch {
			case !ours:
				first := !xdpLost
				xdpLost = true
				if first {
					d.log.Printf("its XDP program was detached by another tool (now attached: id %d): attaching it again; until then the kernel's stack gets this device's frames", l.XDPProgID)
				}
				if err := d.reattach(); err == nil {
					w.reattached.Add(1)
				} else if first {
					d.log.Printf("attaching its XDP program again: %v (retrying every %v)", err, attachPoll)
				}
			case xdpLost:
				xdpLost = false
				d.log.Printf("its XDP program is attached again")
			}
		}
		if w.tcID != 0 && !tcGone && !tcAttached(d.tc) {
			tcGone = true
			w.tcLost.Add(1)
			d.ft.tcFailed(d.log, errors.New("its TC ingress program was detached by another tool"), false)
		}
	}
}

// reattach attaches the device's program again where it was lost.
func (d *Device) reattach() error {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.closed {
		return errors.New("closed")
	}
	// A BPF link detached by another tool stays open but defunct:
	// release it, then attach anew in the mode Open settled on.
	if d.linkFD >= 0 {
		unix.Close(d.linkFD)
		d.linkFD = -1
	}
	d.attached = false
	return d.attach(d.Mode)
}

// tcAttached reports whether the tcx link tc is still attached (true
// when the kernel cannot say). Asked of the link itself, which works from
// any network namespace: a link another tool detached reports no
// interface.
func tcAttached(tc io.Closer) bool {
	l, ok := tc.(link.Link)
	if !ok {
		return true
	}
	info, err := l.Info()
	if err != nil {
		return true
	}
	if x := info.TCX(); x != nil {
		return x.Ifindex != 0
	}
	return true
}
