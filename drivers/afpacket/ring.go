package afpacket

import (
	"fmt"
	"sync/atomic"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/junction-dataplane/junction/drivers"
	"github.com/junction-dataplane/junction/drivers/internal/linkstats"
	"github.com/junction-dataplane/junction/packet"
)

// rxQueue is one fanout member: a socket and its TPACKET_V2 ring. With
// a fast path in TC (bindProtos), a queue is a socket per EtherType: the
// first (IPv4) carries the queue and holds the others in more, which
// Receive reads after it, and epfd, which poll(2) reports readable when
// any of them is.
type rxQueue struct {
	_      [64]byte
	id     uint16
	fd     int
	ring   []byte
	frames int
	next   int // the next frame to look at
	pool   *packet.Pool
	more   []*rxQueue
	epfd   int // -1: none (a single socket: fd)

	pkts, bytes, poolEmpty, truncated, outgoingSeen atomic.Uint64
	kernelDrops                                     linkstats.Accumulator // PACKET_STATISTICS tp_drops, under Device.mu
	outgoing                                        uint64                // own frames skipped, this poll
	_                                               [64]byte
}

// The EtherTypes the RX sockets of a device with a fast path in TC are
// bound to, instead of ETH_P_ALL. The kernel hands a received frame to
// ETH_P_ALL sockets (its taps) before the device's TC ingress programs
// run, and to sockets bound to one EtherType after them
// (__netif_receive_skb_core): bound to a type, the slow path gets only
// the frames the fast path left to the stack, and the fast path's frames
// cost it nothing (bound to ETH_P_ALL, every forwarded frame would be
// copied into a ring as well, and the graph would see it twice).
// Frames of other EtherTypes (LLDP, VLAN-tagged ones the kernel has no
// device for) reach no socket: the graphs Junction runs drop them anyway.
// The ARP socket's ring is one block: ARP is little traffic.
var bindProtos = []uint16{unix.ETH_P_IP, unix.ETH_P_IPV6, unix.ETH_P_ARP}

// newRxQueue opens queue id's socket, bound to ETH_P_ALL, or with
// typed to one socket per bindProtos type.
func newRxQueue(ifindex, id int, c *Config, typed bool) (r *rxQueue, err error) {
	if !typed {
		return newRxSocket(ifindex, id, c, unix.ETH_P_ALL, PoolSize)
	}
	if r, err = newRxSocket(ifindex, id, c, bindProtos[0], PoolSize); err != nil {
		return nil, err
	}
	defer func() {
		if err != nil {
			r.close()
		}
	}()
	for i, proto := range bindProtos[1:] {
		sc, pool := *c, PoolSize
		if i == len(bindProtos)-2 { // ARP
			// One block of ring, and a pool no larger: ARP frames
			// leave the graph as they come (answered or learnt), so a
			// pool the size of the IPv4 one would be 8 MiB of heap a
			// queue that nothing uses.
			sc.Frames = c.BlockSize / frameSize
			pool = min(PoolSize, sc.Frames)
		}
		m, err := newRxSocket(ifindex, id, &sc, proto, pool)
		if err != nil {
			return nil, fmt.Errorf("EtherType %#04x: %w", proto, err)
		}
		r.more = append(r.more, m)
	}
	if r.epfd, err = unix.EpollCreate1(unix.EPOLL_CLOEXEC); err != nil {
		return nil, fmt.Errorf("epoll: %w", err)
	}
	for _, s := range r.sockets() {
		ev := unix.EpollEvent{Events: unix.EPOLLIN, Fd: int32(s.fd)}
		if err := unix.EpollCtl(r.epfd, unix.EPOLL_CTL_ADD, s.fd, &ev); err != nil {
			return nil, fmt.Errorf("epoll: %w", err)
		}
	}
	return r, nil
}

// counts sums the receive counters of the queue's sockets.
func (r *rxQueue) counts() (pkts, bytes, empty, trunc, own, kdrop uint64) {
	for _, s := range r.sockets() {
		pkts += s.pkts.Load()
		bytes += s.bytes.Load()
		empty += s.poolEmpty.Load()
		trunc += s.truncated.Load()
		own += s.outgoingSeen.Load()
		kdrop += s.kernelDrops.Total()
	}
	return
}

// sockets are the queue's sockets: r, then r.more.
func (r *rxQueue) sockets() []*rxQueue {
	if len(r.more) == 0 {
		return []*rxQueue{r}
	}
	return append([]*rxQueue{r}, r.more...)
}

// waitFD is what poll(2) waits on for the queue.
func (r *rxQueue) waitFD() int {
	if r.epfd >= 0 {
		return r.epfd
	}
	return r.fd
}

// join adds the queue's sockets to the device's fanout groups, groups[i]
// for socket i (a 0 entry asks the kernel for a fresh id, written back).
func (r *rxQueue) join(groups []int) error {
	for i, s := range r.sockets() {
		g, err := s.joinFanout(groups[i])
		if err != nil {
			return err
		}
		groups[i] = g
	}
	return nil
}

// newRxSocket opens one socket bound to EtherType proto with its ring and
// a pool of pool packets.
func newRxSocket(ifindex, id int, c *Config, proto uint16, pool int) (r *rxQueue, err error) {
	fd, err := unix.Socket(unix.AF_PACKET, unix.SOCK_RAW|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return nil, err
	}
	r = &rxQueue{id: uint16(id), fd: fd, frames: c.Frames, epfd: -1}
	defer func() {
		if err != nil {
			r.close()
		}
	}()
	if err := unix.SetsockoptInt(fd, unix.SOL_PACKET, unix.PACKET_VERSION, unix.TPACKET_V2); err != nil {
		return nil, fmt.Errorf("PACKET_VERSION: %w", err)
	}
	req := unix.TpacketReq{
		Block_size: uint32(c.BlockSize),
		Block_nr:   uint32(c.Frames * frameSize / c.BlockSize),
		Frame_size: frameSize,
		Frame_nr:   uint32(c.Frames),
	}
	if err := unix.SetsockoptTpacketReq(fd, unix.SOL_PACKET, unix.PACKET_RX_RING, &req); err != nil {
		return nil, fmt.Errorf("PACKET_RX_RING: %w", err)
	}
	r.ring, err = unix.Mmap(fd, 0, c.Frames*frameSize, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED|unix.MAP_POPULATE)
	if err != nil {
		return nil, fmt.Errorf("mapping the ring: %w", err)
	}
	// Not our own transmissions (kernel ≥ 4.20; older kernels: best effort).
	_ = unix.SetsockoptInt(fd, unix.SOL_PACKET, unix.PACKET_IGNORE_OUTGOING, 1)
	if err := unix.Bind(fd, &unix.SockaddrLinklayer{Protocol: htons(proto), Ifindex: ifindex}); err != nil {
		return nil, fmt.Errorf("bind: %w", err)
	}
	r.pool = packet.NewPool(pool)
	return r, nil
}

// joinFanout adds the socket to the device's fanout group; group 0 asks
// the kernel for a fresh unique id, which it returns.
//
// The group is asked not to take the device's own transmissions
// (PACKET_FANOUT_FLAG_IGNORE_OUTGOING): a fanout group receives through
// a hook of its own, which the members' PACKET_IGNORE_OUTGOING does not
// reach, so without the flag every frame the device sends is copied into
// an RX ring (rx_own_skipped) only to be skipped there. A kernel that
// refuses the flag gets the group without it, and one that predates it
// takes the flag and ignores it (so no probe can tell): the ring loop
// filters PACKET_OUTGOING frames either way, counted in rx_own_skipped,
// which is how such a kernel shows. Tests set fanoutIgnoreOutgoing to 0
// to take that path.
func (r *rxQueue) joinFanout(group int) (int, error) {
	arg := unix.PACKET_FANOUT_HASH << 16
	if group == 0 {
		arg |= unix.PACKET_FANOUT_FLAG_UNIQUEID << 16
	} else {
		arg |= group
	}
	err := unix.SetsockoptInt(r.fd, unix.SOL_PACKET, unix.PACKET_FANOUT, arg|fanoutIgnoreOutgoing<<16)
	if err != nil {
		err = unix.SetsockoptInt(r.fd, unix.SOL_PACKET, unix.PACKET_FANOUT, arg)
	}
	if err != nil {
		return 0, err
	}
	if group == 0 {
		v, err := unix.GetsockoptInt(r.fd, unix.SOL_PACKET, unix.PACKET_FANOUT)
		if err != nil {
			return 0, err
		}
		group = v & 0xffff
	}
	return group, nil
}

// fanoutIgnoreOutgoing is the fanout flag joinFanout asks for (0: none).
var fanoutIgnoreOutgoing = unix.PACKET_FANOUT_FLAG_IGNORE_OUTGOING

// sllPktTypeOff is where the kernel writes the frame's sockaddr_ll packet
// type (sll_pkttype) in a ring frame: the sockaddr_ll follows the
// TPACKET_V2 header at TPACKET_ALIGN(sizeof(struct tpacket2_hdr)) = 32, and
// sll_pkttype is its byte 10.
const sllPktTypeOff = 32 + 10

// hdr returns the TPACKET_V2 header of ring frame i.
func (r *rxQueue) hdr(i int) *unix.Tpacket2Hdr {
	return (*unix.Tpacket2Hdr)(unsafe.Pointer(&r.ring[i*frameSize]))
}

// receive copies up to a batch of frames out of the queue's rings.
func (r *rxQueue) receive(dev uint16, b *packet.Batch) int {
	got := r.receiveRing(dev, b)
	for _, m := range r.more {
		if b.Full() {
			break
		}
		got += m.receiveRing(dev, b)
	}
	return got
}

// receiveRing copies up to a batch of frames out of the socket's ring.
func (r *rxQueue) receiveRing(dev uint16, b *packet.Batch) int {
	got := 0
	var bytes, trunc uint64
	for !b.Full() {
		h := r.hdr(r.next)
		st := atomic.LoadUint32(&h.Status)
		if st&unix.TP_STATUS_USER == 0 {
			break
		}
		if r.ring[r.next*frameSize+sllPktTypeOff] == unix.PACKET_OUTGOING {
			// Our own transmission looped back (a kernel without
			// PACKET_FANOUT_FLAG_IGNORE_OUTGOING: joinFanout): skipped,
			// or a router would route its own output again.
			r.outgoing++
		} else if h.Len != h.Snaplen || int(h.Mac)+int(h.Snaplen) > frameSize || h.Snaplen > packet.BufSize-packet.Headroom {
			trunc++
		} else {
			p := r.pool.Get()
			if p == nil {
				// Leave the frame for the next poll: the graph will
				// free packets.
				r.poolEmpty.Add(1)
				break
			}
			off := r.next*frameSize + int(h.Mac)
			p.SetFrame(r.ring[off : off+int(h.Snaplen)])
			p.L3 = packet.L3Offset(p.Data)
			p.InDevice, p.InQueue = dev, r.id
			b.Add(p)
			bytes += uint64(h.Snaplen)
			got++
		}
		atomic.StoreUint32(&h.Status, unix.TP_STATUS_KERNEL)
		r.next++
		if r.next == r.frames {
			r.next = 0
		}
	}
	if got != 0 {
		r.pkts.Add(uint64(got))
		r.bytes.Add(bytes)
	}
	if trunc != 0 {
		r.truncated.Add(trunc)
	}
	if r.outgoing != 0 {
		r.outgoingSeen.Add(r.outgoing)
		r.outgoing = 0
	}
	return got
}

// discard hands every frame the kernel has put in the queue's rings
// back to it unread and reports how many there were: a queue a reload
// removes is emptied this way before it closes.
func (r *rxQueue) discard() int {
	n := r.discardRing()
	for _, m := range r.more {
		n += m.discardRing()
	}
	return n
}

func (r *rxQueue) discardRing() int {
	n := 0
	for {
		h := r.hdr(r.next)
		if atomic.LoadUint32(&h.Status)&unix.TP_STATUS_USER == 0 {
			return n
		}
		atomic.StoreUint32(&h.Status, unix.TP_STATUS_KERNEL)
		r.next++
		if r.next == r.frames {
			r.next = 0
		}
		n++
	}
}

// readKernelStats adds the socket's PACKET_STATISTICS drops to
// kernelDrops: the kernel zeroes its counters on every read, so each
// reading is what was dropped since the previous one.
func (r *rxQueue) readKernelStats() {
	for _, m := range r.more {
		m.readKernelStats()
	}
	if r.fd < 0 {
		return
	}
	var st unix.TpacketStats
	size := uint32(unsafe.Sizeof(st))
	if _, _, e := unix.Syscall6(unix.SYS_GETSOCKOPT, uintptr(r.fd), unix.SOL_PACKET, unix.PACKET_STATISTICS,
		uintptr(unsafe.Pointer(&st)), uintptr(unsafe.Pointer(&size)), 0); e == 0 {
		r.kernelDrops.AddDelta(uint64(st.Drops))
	}
}

func (r *rxQueue) close() error {
	var err error
	for _, m := range r.more {
		if e := m.close(); err == nil {
			err = e
		}
	}
	if r.epfd >= 0 {
		unix.Close(r.epfd)
		r.epfd = -1
	}
	if r.ring != nil {
		err = unix.Munmap(r.ring)
		r.ring = nil
	}
	if r.fd >= 0 {
		if e := unix.Close(r.fd); err == nil {
			err = e
		}
		r.fd = -1
	}
	return err
}

// txSocket is one worker's transmit socket.
type txSocket struct {
	_    [64]byte
	fd   int
	msgs []unix.Mmsghdr
	iovs []unix.Iovec

	pkts, bytes, dropped, errors, tooLong atomic.Uint64
	maxFrame                              int // drivers.MaxFrame of the interface's MTU at open
	_                                     [64]byte
}

// txSndBuf is the send buffer each transmit socket asks for (the
// kernel doubles it for its own overhead: 8 MiB of charge). The kernel
// charges every frame a socket sends to the socket until the receiving
// end is done with it: on a veth, until the peer's stack has taken it
// from its CPU's backlog queue. Once the charge reaches the buffer,
// sendmmsg (MSG_DONTWAIT) fails with EAGAIN and, after the few retries
// transmit makes, the rest of the batch is dropped (tx_dropped). At the
// default (net.core.wmem_default, 212,992 bytes: about 50 full-size
// frames, fewer than a batch) that happened whenever the peer's backlog
// was late: with the fast path in TC, where the veths' RPS also queues
// the hosts' frames to that backlog, iperf3 -P 8 through the graph lost
// 700-2,800 frames a 2-second run and retransmitted as many
// (benchmarks/e2e-tcp.md). It costs nothing while the frames are taken
// promptly: the buffer is a bound on charge, not memory set aside.
const txSndBuf = 4 << 20

func newTxSocket(ifindex int) (*txSocket, error) {
	fd, err := unix.Socket(unix.AF_PACKET, unix.SOCK_RAW|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return nil, err
	}
	// SO_SNDBUFFORCE (CAP_NET_ADMIN) goes beyond net.core.wmem_max;
	// without it SO_SNDBUF gets what wmem_max allows. Neither failing
	// stops the device: it sends as before, with the default buffer.
	if unix.SetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_SNDBUFFORCE, txSndBuf) != nil {
		_ = unix.SetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_SNDBUF, txSndBuf)
	}
	// Protocol 0: bound to the interface for sending, receives nothing.
	if err := unix.Bind(fd, &unix.SockaddrLinklayer{Ifindex: ifindex}); err != nil {
		unix.Close(fd)
		return nil, fmt.Errorf("bind: %w", err)
	}
	t := &txSocket{fd: fd, msgs: make([]unix.Mmsghdr, packet.MaxBatch), iovs: make([]unix.Iovec, packet.MaxBatch)}
	for i := range t.msgs {
		t.msgs[i].Hdr.Iov = &t.iovs[i]
		t.msgs[i].Hdr.SetIovlen(1)
	}
	return t, nil
}

// transmit sends the batch with sendmmsg and frees every packet.
func (t *txSocket) transmit(b *packet.Batch) {
	n := len(b.Pkts)
	if n == 0 {
		return
	}
	if n > len(t.msgs) {
		n = len(t.msgs)
	}
	var bytes uint64
	k, tooLong := 0, 0 // frames kept; frames longer than the interface takes
	for i := 0; i < n; i++ {
		p := b.Pkts[i]
		d := p.Data
		if len(d) > t.maxFrame && drivers.TooLong(d, t.maxFrame) {
			// Refused here, not by the kernel: each refusal would cost
			// sendmmsg a call of the few it retries.
			tooLong++
			p.Free()
			continue
		}
		b.Pkts[k] = p
		if len(d) == 0 {
			t.iovs[k].Base = nil
		} else {
			t.iovs[k].Base = &d[0]
		}
		t.iovs[k].SetLen(len(d))
		k++
	}
	if k < n {
		b.Truncate(k + copy(b.Pkts[k:], b.Pkts[n:]))
		n = k
	}
	// done: frames handled (sent or refused); sent ⊆ done.
	done, sent, refused, tooLongKernel := 0, 0, 0, 0
	for tries := 0; done < n && tries < txRetries; tries++ {
		// Raw: the call never blocks (MSG_DONTWAIT), so the worker keeps
		// its P through it. Through the runtime's system call path, a
		// sendmmsg into a veth (which runs the receiving host's stack
		// before it returns, hundreds of microseconds) had its P taken
		// by sysmon, which then polled every 20 us and preempted the
		// worker inside the call each time: half the forwarder's context
		// switches with eight TCP streams, and about a tenth of its CPU
		// a GB (benchmarks/e2e-tcp.md, "The transmit call keeps its P").
		r, _, e := unix.RawSyscall6(unix.SYS_SENDMMSG, uintptr(t.fd), uintptr(unsafe.Pointer(&t.msgs[done])),
			uintptr(n-done), unix.MSG_DONTWAIT, 0, 0)
		if e != 0 {
			if e == unix.EAGAIN || e == unix.ENOBUFS || e == unix.EINTR {
				continue
			}
			// A frame the device refuses (too long, interface down):
			// count it and go on with the rest. Too long (longer
			// than the MTU, the kernel's check) is counted apart.
			if e == unix.EMSGSIZE {
				tooLong++
				tooLongKernel++ // (an MTU lowered since open)
			} else {
				refused++
			}
			done++
			continue
		}
		for i := done; i < done+int(r); i++ {
			bytes += uint64(len(b.Pkts[i].Data))
		}
		done += int(r)
		sent += int(r)
	}
	t.pkts.Add(uint64(sent))
	t.bytes.Add(bytes)
	if refused > 0 {
		t.errors.Add(uint64(refused))
	}
	if tooLong > 0 {
		t.tooLong.Add(uint64(tooLong))
	}
	if d := len(b.Pkts) - sent - refused - tooLongKernel; d > 0 {
		t.dropped.Add(uint64(d))
	}
	for i := range t.iovs[:n] {
		t.iovs[i].Base = nil
	}
	b.FreeAll()
}
