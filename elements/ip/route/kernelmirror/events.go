package kernelmirror

import (
	"encoding/binary"
	"errors"
	"fmt"
	"net"
	"time"
	"unsafe"

	"github.com/vishvananda/netlink"
	"github.com/vishvananda/netlink/nl"
	"github.com/vishvananda/netns"
	"golang.org/x/sys/unix"
)

// The route events are read here, not through the netlink library's
// subscription: a full table arrives as a million events, and the
// library spends a system call, a goroutine hand-off over a channel and
// several allocations (a netlink.Route with its net.IPNet, net.IP slices
// and paths) on each. Measured at 300k+60k routes, its reader and the
// scheduler's wake-ups took more CPU than the whole rest of the mirror,
// CPU the routing daemon, the kernel's own install and the forwarding
// share on a small router. Here one recvmmsg(2) takes up to eventRecv
// events, each is decoded in place into a routeEvent (a value: no
// pointers, no allocation), and the mirror's goroutine gets them in
// batches of up to eventBatch, the batches going back and forth between
// the two goroutines so that nothing is allocated per event.

const (
	// eventRecv is the number of datagrams (one event each, as the kernel
	// sends them) one recvmmsg takes at most.
	eventRecv = 64
	// eventBuf is each datagram's buffer: a route event is 60–200 bytes;
	// one with many paths (each 16–28 bytes) fits up to about 250 paths.
	// A longer one comes truncated (MSG_TRUNC) and counts as a lost event.
	eventBuf = 8 << 10
	// eventBatch is the most events one batch carries to the mirror.
	eventBatch = 512
	// eventBatches is the number of batches in flight: while the mirror
	// notes one, the reader fills the others; when none is free the
	// reader waits and the socket's buffer (subscribeBuffer) holds what
	// comes meanwhile.
	eventBatches = 8
	// eventPace is how long the reader lets events gather after a read
	// that found only a few.
	eventPace = 2 * time.Millisecond
	// eventStopCheck is how often a reader with nothing to read looks
	// whether it is to stop.
	eventStopCheck = 100 * time.Millisecond
)

// eventPath is one path of a multipath route (RTA_MULTIPATH's rtnexthop
// and its RTA_GATEWAY).
type eventPath struct {
	ifindex int32
	hops    uint8 // the kernel's weight less one
	gwLen   uint8 // 0, 4 or 16
	gw      [16]byte
}

// routeEvent is one RTM_NEWROUTE or RTM_DELROUTE, decoded: the fields the
// mirror reads, as the library's netlink.Route would carry them.
type routeEvent struct {
	add    bool
	family uint8
	typ    uint8
	tos    uint8
	dstLen uint8
	hasDst bool
	gwLen  uint8 // 0, 4 or 16
	table  uint32
	prio   uint32
	oif    int32
	dst    [16]byte
	gw     [16]byte
	// paths are this event's paths in its batch's paths, [p0, p0+np).
	p0, np uint32
}

// eventBatchBuf is one batch of events and the paths they name.
type eventBatchBuf struct {
	ev    []routeEvent
	paths []eventPath
}

// events is a subscription: full batches come on ch (closed when the
// subscription ends: the socket failed, events were lost, or done was
// closed), and go back on free once noted.
type events struct {
	ch   chan *eventBatchBuf
	free chan *eventBatchBuf
}

// subscribeEvents opens a route-event socket in ns (None: the process's)
// with a receive buffer of size bytes (SO_RCVBUFFORCE when force) and
// starts its reader; closing done stops it. errf receives the reason a
// subscription ended (the mirror keeps the last one as its error). A
// stopped reader closes its socket within eventStopCheck.
func subscribeEvents(ns netns.NsHandle, size int, force bool, done chan struct{}, errf func(error)) (*events, error) {
	// The library opens the socket in the namespace (its thread handling
	// is what any namespace switch needs); the reader keeps a duplicate
	// of its descriptor.
	s, err := nl.SubscribeAt(ns, netns.None(), unix.NETLINK_ROUTE, unix.RTNLGRP_IPV4_ROUTE, unix.RTNLGRP_IPV6_ROUTE)
	if err != nil {
		return nil, err
	}
	if err := s.SetReceiveBufferSize(size, force); err != nil {
		s.Close()
		return nil, err
	}
	fd, err := unix.FcntlInt(uintptr(s.GetFd()), unix.F_DUPFD_CLOEXEC, 0)
	s.Close()
	if err != nil {
		return nil, err
	}
	// Blocking, with a timeout to look at done: a reader that sleeps in
	// recvmmsg is woken by the first event and then takes what has
	// gathered; the runtime's poller (edge-triggered) would instead wake
	// for every event that arrives, even while the reader pauses.
	tv := unix.NsecToTimeval(eventStopCheck.Nanoseconds())
	if err := unix.SetNonblock(fd, false); err != nil {
		unix.Close(fd)
		return nil, err
	}
	if err := unix.SetsockoptTimeval(fd, unix.SOL_SOCKET, unix.SO_RCVTIMEO, &tv); err != nil {
		unix.Close(fd)
		return nil, err
	}
	e := &events{ch: make(chan *eventBatchBuf, eventBatches), free: make(chan *eventBatchBuf, eventBatches)}
	for range eventBatches {
		e.free <- &eventBatchBuf{ev: make([]routeEvent, 0, eventBatch)}
	}
	go func() {
		err := readEvents(fd, e, done)
		unix.Close(fd)
		if err != nil && errf != nil {
			errf(err)
		}
		close(e.ch)
	}()
	return e, nil
}

// send passes b on to the mirror; false if done was closed first (the
// mirror no longer reads: a stopped reader goes without waiting for it).
func (e *events) send(b *eventBatchBuf, done chan struct{}) bool {
	select {
	case e.ch <- b:
		return true
	case <-done:
		return false
	}
}

// mmsghdr is struct mmsghdr: a msghdr and the length received (the
// runtime pads it as the C compiler does on every Linux architecture).
type mmsghdr struct {
	hdr unix.Msghdr
	n   uint32
}

// readEvents reads fd until it fails or done is closed, passing the
// events on in batches.
func readEvents(fd int, e *events, done chan struct{}) error {
	bufs := make([]byte, eventRecv*eventBuf)
	var (
		msgs  [eventRecv]mmsghdr
		iovs  [eventRecv]unix.Iovec
		names [eventRecv]unix.RawSockaddrNetlink
	)
	for i := range msgs {
		iovs[i].Base = &bufs[i*eventBuf]
		iovs[i].SetLen(eventBuf)
		msgs[i].hdr.Iov = &iovs[i]
		msgs[i].hdr.SetIovlen(1)
		msgs[i].hdr.Name = (*byte)(unsafe.Pointer(&names[i]))
	}
	var b *eventBatchBuf
	for {
		for i := range msgs {
			msgs[i].hdr.Namelen = unix.SizeofSockaddrNetlink
			msgs[i].hdr.Flags = 0
		}
		r, _, errno := unix.Syscall6(unix.SYS_RECVMMSG, uintptr(fd), uintptr(unsafe.Pointer(&msgs[0])), eventRecv, unix.MSG_WAITFORONE, 0, 0)
		n := int(r)
		select {
		case <-done:
			return nil
		default:
		}
		if errno == unix.EAGAIN || errno == unix.EINTR {
			continue // the timeout (eventStopCheck) or a signal
		}
		select {
		case <-done:
			return nil
		default:
		}
		if errno != 0 {
			// ENOBUFS: the buffer overflowed and events were lost.
			return fmt.Errorf("route events: %v", errno)
		}
		for i := range n {
			if names[i].Pid != 0 {
				continue // not the kernel's
			}
			if msgs[i].hdr.Flags&unix.MSG_TRUNC != 0 {
				return errors.New("route events: an event longer than the buffer (lost)")
			}
			if b == nil {
				select {
				case b = <-e.free:
				case <-done:
					return nil
				}
			}
			decodeEvents(bufs[i*eventBuf:i*eventBuf+int(msgs[i].n)], b)
			if len(b.ev) >= eventBatch-eventRecv {
				if !e.send(b, done) {
					return nil
				}
				b = nil
			}
		}
		if n < eventRecv && b != nil && len(b.ev) > 0 {
			// Nothing more is waiting: pass on what there is (the next
			// read would otherwise wait with it).
			if !e.send(b, done) {
				return nil
			}
			b = nil
		}
		if n < eventRecv/2 {
			// The reader keeps up with the kernel: while a table loads
			// that would be a wake-up of both goroutines per event or
			// two. Let the events gather for a moment first; the
			// socket's buffer holds seconds of them, and the mirror
			// publishes at most every publishEvery anyway. A change
			// after a pause is still read at once.
			time.Sleep(eventPace)
		}
	}
}

// decodeEvents appends the route events among the netlink messages of one
// datagram to b. A message it cannot parse is skipped, as the library
// skips one it cannot deserialize.
func decodeEvents(d []byte, b *eventBatchBuf) {
	for len(d) >= unix.NLMSG_HDRLEN {
		l := int(binary.NativeEndian.Uint32(d[0:4]))
		typ := binary.NativeEndian.Uint16(d[4:6])
		if l < unix.NLMSG_HDRLEN || l > len(d) {
			return
		}
		if typ == unix.RTM_NEWROUTE || typ == unix.RTM_DELROUTE {
			var ev routeEvent
			if decodeRoute(d[unix.NLMSG_HDRLEN:l], &ev, b) {
				ev.add = typ == unix.RTM_NEWROUTE
				b.ev = append(b.ev, ev)
			}
		}
		d = d[min(nlmAlign(l), len(d)):]
	}
}

// nlaTypeMask takes an attribute's type without its NLA_F_NESTED and
// NLA_F_NET_BYTEORDER flags.
const nlaTypeMask = 0x3fff

func nlmAlign(n int) int { return (n + unix.NLMSG_ALIGNTO - 1) &^ (unix.NLMSG_ALIGNTO - 1) }
func rtaAlign(n int) int { return (n + unix.RTA_ALIGNTO - 1) &^ (unix.RTA_ALIGNTO - 1) }

// decodeRoute decodes an rtmsg and its attributes into ev (paths appended
// to b.paths); false if it is malformed.
func decodeRoute(d []byte, ev *routeEvent, b *eventBatchBuf) bool {
	if len(d) < unix.SizeofRtMsg {
		return false
	}
	ev.family, ev.dstLen, ev.tos, ev.typ = d[0], d[1], d[3], d[7]
	ev.table = uint32(d[4])
	ev.p0 = uint32(len(b.paths))
	for a := d[unix.SizeofRtMsg:]; len(a) >= unix.SizeofRtAttr; {
		l := int(binary.NativeEndian.Uint16(a[0:2]))
		t := binary.NativeEndian.Uint16(a[2:4]) & nlaTypeMask
		if l < unix.SizeofRtAttr || l > len(a) {
			return false
		}
		v := a[unix.SizeofRtAttr:l]
		switch t {
		case unix.RTA_DST:
			ev.hasDst = copyAddr(&ev.dst, v) > 0
		case unix.RTA_GATEWAY:
			ev.gwLen = copyAddr(&ev.gw, v)
		case unix.RTA_OIF:
			if len(v) >= 4 {
				ev.oif = int32(binary.NativeEndian.Uint32(v))
			}
		case unix.RTA_PRIORITY:
			if len(v) >= 4 {
				ev.prio = binary.NativeEndian.Uint32(v)
			}
		case unix.RTA_TABLE:
			if len(v) >= 4 {
				ev.table = binary.NativeEndian.Uint32(v)
			}
		case unix.RTA_MULTIPATH:
			if !decodePaths(v, b) {
				return false
			}
		}
		a = a[min(rtaAlign(l), len(a)):]
	}
	ev.np = uint32(len(b.paths)) - ev.p0
	return true
}

// decodePaths appends RTA_MULTIPATH's paths (struct rtnexthop, each with
// its attributes) to b.paths.
func decodePaths(v []byte, b *eventBatchBuf) bool {
	const sizeofRtNexthop = 8
	for len(v) >= sizeofRtNexthop {
		l := int(binary.NativeEndian.Uint16(v[0:2]))
		if l < sizeofRtNexthop || l > len(v) {
			return false
		}
		p := eventPath{hops: v[3], ifindex: int32(binary.NativeEndian.Uint32(v[4:8]))}
		for a := v[sizeofRtNexthop:l]; len(a) >= unix.SizeofRtAttr; {
			al := int(binary.NativeEndian.Uint16(a[0:2]))
			if al < unix.SizeofRtAttr || al > len(a) {
				return false
			}
			if binary.NativeEndian.Uint16(a[2:4])&nlaTypeMask == unix.RTA_GATEWAY {
				p.gwLen = copyAddr(&p.gw, a[unix.SizeofRtAttr:al])
			}
			a = a[min(rtaAlign(al), len(a)):]
		}
		b.paths = append(b.paths, p)
		v = v[min(rtaAlign(l), len(v)):]
	}
	return true
}

// copyAddr copies an IPv4 or IPv6 address attribute into a and returns
// its length (0 if it is neither).
func copyAddr(a *[16]byte, v []byte) uint8 {
	if len(v) != 4 && len(v) != 16 {
		return 0
	}
	copy(a[:], v)
	return uint8(len(v))
}

// routeScratch holds the buffers a netlink.Route made from an event points
// into, reused for every event (note copies what it keeps).
type routeScratch struct {
	r     netlink.Route
	dst   net.IPNet
	dstIP [16]byte
	mask  [16]byte
	gw    [16]byte
	nhs   []netlink.NexthopInfo
	nhps  []*netlink.NexthopInfo
	nhgw  [][16]byte
}

// route fills s.r with ev (paths: its batch's) as the library's decoder
// would, and returns it; valid until the next call.
func (s *routeScratch) route(ev *routeEvent, paths []eventPath) *netlink.Route {
	s.r = netlink.Route{Family: int(ev.family), Table: int(ev.table), Type: int(ev.typ), Tos: int(ev.tos),
		Priority: int(ev.prio), LinkIndex: int(ev.oif)}
	alen := 4
	if ev.family == unix.AF_INET6 {
		alen = 16
	}
	if ev.hasDst || ev.family == unix.AF_INET || ev.family == unix.AF_INET6 {
		// Without RTA_DST (a default route) the library reports the
		// zero prefix of the family: so does this.
		copy(s.dstIP[:], ev.dst[:alen])
		s.dst.IP = s.dstIP[:alen]
		s.dst.Mask = s.mask[:alen]
		clear(s.dst.Mask)
		for i := range min(int(ev.dstLen), 8*alen) {
			s.dst.Mask[i/8] |= 0x80 >> (i % 8)
		}
		s.r.Dst = &s.dst
	}
	if ev.gwLen > 0 {
		copy(s.gw[:], ev.gw[:ev.gwLen])
		s.r.Gw = s.gw[:ev.gwLen]
	}
	if ev.np > 0 {
		ps := paths[ev.p0 : ev.p0+ev.np]
		if cap(s.nhs) < len(ps) {
			s.nhs = make([]netlink.NexthopInfo, len(ps))
			s.nhps = make([]*netlink.NexthopInfo, len(ps))
			s.nhgw = make([][16]byte, len(ps))
		}
		s.nhs, s.nhps, s.nhgw = s.nhs[:len(ps)], s.nhps[:len(ps)], s.nhgw[:len(ps)]
		for i := range ps {
			s.nhs[i] = netlink.NexthopInfo{LinkIndex: int(ps[i].ifindex), Hops: int(ps[i].hops)}
			if ps[i].gwLen > 0 {
				s.nhgw[i] = ps[i].gw
				s.nhs[i].Gw = s.nhgw[i][:ps[i].gwLen]
			}
			s.nhps[i] = &s.nhs[i]
		}
		s.r.MultiPath = s.nhps
	}
	return &s.r
}
