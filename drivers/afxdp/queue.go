package afxdp

import (
	"fmt"
	"sync"
	"sync/atomic"
	"unsafe"

	"github.com/asavie/xdp"
	"golang.org/x/sys/unix"

	"github.com/junction-dataplane/junction/drivers"
	"github.com/junction-dataplane/junction/packet"
)

// queue is one AF_XDP socket, its UMEM and the packets mapped onto it.
type queue struct {
	_      [64]byte // keep the hot fields off a neighbour's cache line
	id     uint16
	shared bool // used by more than one worker: lock per batch, copy TX
	mu     sync.Mutex

	xsk  *xdp.Socket
	base uintptr // address of UMEM frame 0
	ring int
	rx   *packet.Pool // frames [0, nrx)
	tx   *packet.Pool // frames [nrx, frames)
	nrx  uint64

	// inflight[frame] is the packet whose frame the kernel holds for TX
	// (TX ring or not yet completed); txOut counts them.
	inflight []*packet.Packet
	txOut    int

	fill  []xdp.Desc
	descs []xdp.Desc

	// Our own mapping of the completion ring.
	crMem   []byte
	crProd  *uint32
	crCons  *uint32
	crDescs []uint64
	crMask  uint32

	// The RX ring's indices, mapped read-only (RxPosition).
	rxMem          []byte
	rxProd, rxCons *uint32

	rxPkts, rxBytes, txPkts, txBytes atomic.Uint64
	txDropped, txNoBuf, txKickFailed atomic.Uint64
	// txUnconfirmed counts the frames handed to the kernel whose
	// completion had not come when the socket closed (close): on a veth
	// the kernel completes a frame only once the receiving side has
	// taken it, which a starved peer may not have done within the
	// flush's wait. Sent or not, the kernel never said; they are counted
	// with the transmit losses so that every frame is accounted for.
	txUnconfirmed                         atomic.Uint64
	poolEmpty, rxInvalid, completeInvalid atomic.Uint64
	// rxRemoved counts the frames a reload that removed this queue found
	// in its RX ring after the swap: no worker reads it any more.
	rxRemoved atomic.Uint64

	// maxFrame is drivers.MaxFrame of the interface's MTU: longer
	// frames are not sent but counted in txTooLong (tx_dropped_too_long).
	maxFrame  int
	txTooLong atomic.Uint64

	// kernelFinal is the socket's XDP_STATISTICS when close released it
	// (under mu), so that the exit table still shows the kernel's drops.
	kernelFinal unix.XDPStatistics
	_           [64]byte
}

func newQueue(id int, xsk *xdp.Socket, frames, ring int) (*queue, error) {
	q := &queue{
		id: uint16(id), xsk: xsk, ring: ring,
		inflight: make([]*packet.Packet, frames),
		fill:     make([]xdp.Desc, 0, ring),
		descs:    make([]xdp.Desc, 0, packet.MaxBatch),
		crMask:   uint32(ring - 1),
	}
	umem := xsk.GetFrame(xdp.Desc{Addr: 0, Len: uint32(frames * packet.BufSize)})
	q.base = uintptr(unsafe.Pointer(unsafe.SliceData(umem)))
	nrx := frames - ring
	q.nrx = uint64(nrx)
	q.rx = packet.NewPoolFrom(umem[:nrx*packet.BufSize], nrx)
	q.tx = packet.NewPoolFrom(umem[nrx*packet.BufSize:], ring)

	var off unix.XDPMmapOffsets
	size := uint32(unsafe.Sizeof(off))
	if _, _, e := unix.Syscall6(unix.SYS_GETSOCKOPT, uintptr(xsk.FD()), unix.SOL_XDP, unix.XDP_MMAP_OFFSETS,
		uintptr(unsafe.Pointer(&off)), uintptr(unsafe.Pointer(&size)), 0); e != 0 {
		return nil, fmt.Errorf("XDP_MMAP_OFFSETS: %v", e)
	}
	mem, err := unix.Mmap(xsk.FD(), unix.XDP_UMEM_PGOFF_COMPLETION_RING,
		int(off.Cr.Desc)+ring*8, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED|unix.MAP_POPULATE)
	if err != nil {
		return nil, fmt.Errorf("mapping the completion ring: %v", err)
	}
	q.crMem = mem
	q.crProd = (*uint32)(unsafe.Pointer(&mem[off.Cr.Producer]))
	q.crCons = (*uint32)(unsafe.Pointer(&mem[off.Cr.Consumer]))
	q.crDescs = unsafe.Slice((*uint64)(unsafe.Pointer(&mem[off.Cr.Desc])), ring)
	if err := q.mapRxIndices(xsk.FD(), off); err != nil {
		unix.Munmap(q.crMem)
		return nil, err
	}
	return q, nil
}

// refill hands every free RX frame the fill ring has room for to the kernel.
func (q *queue) refill() {
	n := q.xsk.NumFreeFillSlots()
	if a := q.rx.Available(); n > a {
		if a == 0 && n == q.ring {
			// The kernel has no frame to receive into: the graph holds
			// them all.
			q.poolEmpty.Add(1)
		}
		n = a
	}
	if n == 0 {
		return
	}
	f := q.fill[:0]
	for i := 0; i < n; i++ {
		p := q.rx.GetRaw()
		f = append(f, xdp.Desc{Addr: frameIndex(p, q.base) * packet.BufSize})
	}
	q.xsk.Fill(f)
}

// receive moves up to a batch of frames from the RX ring into b.
func (q *queue) receive(dev uint16, b *packet.Batch) int {
	if q.shared {
		q.mu.Lock()
	}
	if q.txOut > 0 {
		q.reap()
	}
	got := 0
	n := q.xsk.NumReceived()
	if room := b.Cap() - b.Len(); n > room {
		n = room
	}
	if n > 0 {
		var bytes, bad uint64
		for _, d := range q.xsk.Receive(n) {
			idx := d.Addr / packet.BufSize
			off := d.Addr % packet.BufSize
			if idx >= q.nrx {
				bad++ // not a frame we filled: never touch it
				continue
			}
			p := q.rx.Packet(int(idx))
			if off+uint64(d.Len) > packet.BufSize || d.Len == 0 {
				bad++
				p.Free()
				continue
			}
			p.Reset()
			p.Data = p.Buffer()[off : off+uint64(d.Len)]
			// Past a trunk's VLAN tags: steering hashes the IP flow
			// inside them.
			p.L3 = packet.L3Offset(p.Data)
			p.InDevice, p.InQueue = dev, q.id
			b.Add(p)
			bytes += uint64(d.Len)
			got++
		}
		q.rxPkts.Add(uint64(got))
		q.rxBytes.Add(bytes)
		if bad != 0 {
			q.rxInvalid.Add(bad)
		}
	}
	q.refill()
	if q.xsk.NumFreeTxSlots() < q.ring {
		q.kick()
	}
	if q.shared {
		q.mu.Unlock()
	}
	return got
}

// reap returns the frames the kernel has finished sending.
func (q *queue) reap() {
	prod := atomic.LoadUint32(q.crProd)
	cons := *q.crCons
	if prod == cons {
		return
	}
	var pkts, bytes uint64
	for ; cons != prod; cons++ {
		idx := q.crDescs[cons&q.crMask] / packet.BufSize
		if idx >= uint64(len(q.inflight)) || q.inflight[idx] == nil {
			q.completeInvalid.Add(1)
			continue
		}
		p := q.inflight[idx]
		q.inflight[idx] = nil
		bytes += uint64(len(p.Data))
		pkts++
		p.Free()
	}
	atomic.StoreUint32(q.crCons, cons)
	q.txOut -= int(pkts)
	q.txPkts.Add(pkts)
	q.txBytes.Add(bytes)
}

// transmit queues b on the TX ring and kicks the kernel.
func (q *queue) transmit(b *packet.Batch) {
	if len(b.Pkts) == 0 {
		return
	}
	if q.shared {
		q.mu.Lock()
	}
	if q.txOut > 0 {
		q.reap()
	}
	free := q.xsk.NumFreeTxSlots()
	descs := q.descs[:0]
	var full, nobuf, tooLong uint64
	for i, p := range b.Pkts {
		b.Pkts[i] = nil
		l := len(p.Data)
		if l > q.maxFrame && drivers.TooLong(p.Data, q.maxFrame) {
			tooLong++
			p.Free()
			continue
		}
		if len(descs) == free || l == 0 || l > packet.BufSize {
			full++
			p.Free()
			continue
		}
		if !q.shared && p.Pool() == q.rx {
			// Our own frame: send it where it is.
			idx := frameIndex(p, q.base)
			descs = append(descs, xdp.Desc{Addr: idx*packet.BufSize + uint64(p.Headroom()), Len: uint32(l)})
			q.inflight[idx] = p
			continue
		}
		f := q.tx.GetRaw()
		if f == nil {
			nobuf++
			p.Free()
			continue
		}
		f.Data = f.Buffer()[:l]
		copy(f.Data, p.Data)
		p.Free()
		idx := frameIndex(f, q.base)
		descs = append(descs, xdp.Desc{Addr: idx * packet.BufSize, Len: uint32(l)})
		q.inflight[idx] = f
	}
	b.Pkts = b.Pkts[:0]
	if len(descs) > 0 {
		q.txOut += len(descs)
		q.submit(descs)
		// Copy mode sends ~32 frames per kick: a few more for a big batch.
		for k := len(descs) / 32; k > 0 && q.xsk.NumFreeTxSlots() < q.ring; k-- {
			q.kick()
		}
	}
	if full != 0 {
		q.txDropped.Add(full)
	}
	if nobuf != 0 {
		q.txNoBuf.Add(nobuf)
	}
	if tooLong != 0 {
		q.txTooLong.Add(tooLong)
	}
	if q.shared {
		q.mu.Unlock()
	}
}

// submit puts descs on the TX ring (there is room: transmit checked) and
// kicks. v0.3.3 panics when the kick fails with an unexpected errno (the
// descriptors are on the ring by then): count it and go on.
func (q *queue) submit(descs []xdp.Desc) {
	defer q.recoverKick()
	q.xsk.Transmit(descs)
}

// kick asks the kernel to send what the TX ring holds.
func (q *queue) kick() {
	defer q.recoverKick()
	q.xsk.Transmit(nil)
}

func (q *queue) recoverKick() {
	if r := recover(); r != nil {
		q.txKickFailed.Add(1)
	}
}

// flushStep kicks and reaps once; it reports whether frames are still out.
func (q *queue) flushStep() bool {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.xsk == nil {
		return false
	}
	if q.xsk.NumFreeTxSlots() < q.ring {
		q.kick()
	}
	q.reap()
	return q.txOut > 0
}

func (q *queue) kernelStats() unix.XDPStatistics {
	var s unix.XDPStatistics
	size := uint32(unsafe.Sizeof(s))
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.xsk == nil {
		return q.kernelFinal
	}
	unix.Syscall6(unix.SYS_GETSOCKOPT, uintptr(q.xsk.FD()), unix.SOL_XDP, unix.XDP_STATISTICS,
		uintptr(unsafe.Pointer(&s)), uintptr(unsafe.Pointer(&size)), 0)
	return s
}

func (q *queue) close() error {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.xsk == nil {
		return nil
	}
	if q.txOut > 0 {
		q.reap() // completions that came after the last flush
	}
	if q.txOut > 0 {
		q.txUnconfirmed.Add(uint64(q.txOut))
		q.txOut = 0
		clear(q.inflight) // their memory goes with the UMEM
	}
	size := uint32(unsafe.Sizeof(q.kernelFinal))
	unix.Syscall6(unix.SYS_GETSOCKOPT, uintptr(q.xsk.FD()), unix.SOL_XDP, unix.XDP_STATISTICS,
		uintptr(unsafe.Pointer(&q.kernelFinal)), uintptr(unsafe.Pointer(&size)), 0)
	if q.crMem != nil {
		unix.Munmap(q.crMem)
		q.crMem = nil
	}
	if q.rxMem != nil {
		q.rxProd, q.rxCons = nil, nil
		unix.Munmap(q.rxMem)
		q.rxMem = nil
	}
	unmapRings(q.xsk, q.ring)
	err := q.xsk.Close()
	q.xsk = nil
	return err
}
