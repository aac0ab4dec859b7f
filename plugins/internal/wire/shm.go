package wire

import (
	"encoding/binary"
	"fmt"
	"sync/atomic"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/junction-dataplane/junction/packet"
)

// The shared region is one memfd mapped by both processes:
//
//	0      control page: sequence words and sleep flags, one cache line each
//	4096   descriptors: MaxBatch × DescSize bytes
//	12288  slots: MaxBatch × SlotSize bytes, one packet buffer each
//
// A batch crosses the boundary as: the host copies each frame into its slot
// at the packet's own headroom, fills the descriptor, publishes the batch by
// storing Req (an atomic store: everything written before it is visible to
// the plugin that loads Req), and rings the request doorbell only if the
// plugin said it was going to sleep. The plugin works on the slots in place,
// writes each descriptor's port and length, stores Resp = Req, and rings the
// response doorbell only if the host sleeps. With both sides spinning on a
// busy stream, a batch costs no system call at all.
const (
	MaxBatch = packet.MaxBatch
	SlotSize = packet.BufSize
	DescSize = 16

	ctlSize  = 4096
	descOff  = ctlSize
	descSize = MaxBatch * DescSize // 4096
	slotOff  = descOff + 2*4096    // page-aligned, room to grow the descriptors
	// Size is the size of the shared region.
	Size = slotOff + MaxBatch*SlotSize
)

// Offsets of the control words (each on its own cache line so that the two
// sides do not invalidate each other's lines when they spin).
const (
	offReq          = 0
	offResp         = 64
	offPluginSleeps = 128
	offHostSleeps   = 192
	offCount        = 256 // packets in the batch
	offInPort       = 260 // input port of the batch
	offStatus       = 320 // plugin status of the last batch (StatusOK …)
)

// Descriptor fields (little endian).
const (
	dOff      = 0  // uint16: start of the frame in its slot (the headroom)
	dLen      = 2  // uint16: frame length; the plugin may change it
	dPort     = 4  // uint16: output port, or Drop|reason; written by the plugin
	dL3       = 6  // uint16
	dInDevice = 8  // uint16
	dInQueue  = 10 // uint16
	dFlowHash = 12 // uint32
)

// Port values with the Drop bit set mean "drop, counted under plugin drop
// reason (port & ReasonMask)".
const (
	Drop       = 0x8000
	ReasonMask = 0x00ff
	// MaxReasons bounds the drop reasons a plugin element may declare
	// (the host's Stats has room for 16 counters; it keeps the rest).
	MaxReasons = 6
)

// Fixed descriptor numbers of the region and doorbells in a plugin process
// started for traffic (exec.Cmd.ExtraFiles 0, 1, 2). Descriptor 6, in every
// plugin process, is the plugin's own executable, read-only: the host
// executes the file it checked through it (/proc/self/fd/6).
const (
	FDRegion  = 3
	FDReqBell = 4
	FDRespBel = 5
)

// AfterServe, when set (only test plugins inside plugins/ can: the package
// is internal), runs after the SDK has written a batch's descriptors and
// before it answers: it lets a test plugin forge what the SDK would never
// write, to test the host's checks.
var AfterServe func(r *Region)

// Region is the shared memory as seen by one side.
type Region struct {
	Mem []byte
}

// Map maps the region of fd (Size bytes, shared).
func Map(fd int) (*Region, error) {
	mem, err := unix.Mmap(fd, 0, Size, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED)
	if err != nil {
		return nil, fmt.Errorf("mmap shared region: %w", err)
	}
	return &Region{Mem: mem}, nil
}

// Create makes a new memfd of Size bytes and maps it.
func Create(name string) (fd int, r *Region, err error) {
	fd, err = unix.MemfdCreate(name, unix.MFD_CLOEXEC)
	if err != nil {
		return -1, nil, fmt.Errorf("memfd_create: %w", err)
	}
	if err = unix.Ftruncate(fd, Size); err != nil {
		unix.Close(fd)
		return -1, nil, fmt.Errorf("ftruncate memfd: %w", err)
	}
	r, err = Map(fd)
	if err != nil {
		unix.Close(fd)
		return -1, nil, err
	}
	return fd, r, nil
}

// Unmap releases the mapping.
func (r *Region) Unmap() error {
	if r.Mem == nil {
		return nil
	}
	err := unix.Munmap(r.Mem)
	r.Mem = nil
	return err
}

func (r *Region) word(off int) *uint32 {
	return (*uint32)(unsafe.Pointer(&r.Mem[off]))
}

// Req, Resp and the sleep flags are accessed atomically.
func (r *Region) Req() *atomic.Uint32  { return (*atomic.Uint32)(unsafe.Pointer(r.word(offReq))) }
func (r *Region) Resp() *atomic.Uint32 { return (*atomic.Uint32)(unsafe.Pointer(r.word(offResp))) }

// PluginSleeps is set by the plugin before it blocks on the request bell.
func (r *Region) PluginSleeps() *atomic.Uint32 {
	return (*atomic.Uint32)(unsafe.Pointer(r.word(offPluginSleeps)))
}

// HostSleeps is set by the host before it blocks on the response bell.
func (r *Region) HostSleeps() *atomic.Uint32 {
	return (*atomic.Uint32)(unsafe.Pointer(r.word(offHostSleeps)))
}

// Count and InPort describe the batch; written by the host before Req.
func (r *Region) Count() uint32      { return binary.LittleEndian.Uint32(r.Mem[offCount:]) }
func (r *Region) SetCount(n uint32)  { binary.LittleEndian.PutUint32(r.Mem[offCount:], n) }
func (r *Region) InPort() uint32     { return binary.LittleEndian.Uint32(r.Mem[offInPort:]) }
func (r *Region) SetInPort(n uint32) { binary.LittleEndian.PutUint32(r.Mem[offInPort:], n) }
func (r *Region) Status() uint32     { return binary.LittleEndian.Uint32(r.Mem[offStatus:]) }
func (r *Region) SetStatus(s uint32) { binary.LittleEndian.PutUint32(r.Mem[offStatus:], s) }
func (r *Region) Desc(i int) Desc {
	o := descOff + i*DescSize
	return Desc(r.Mem[o : o+DescSize : o+DescSize])
}
func (r *Region) Slot(i int) []byte {
	o := slotOff + i*SlotSize
	return r.Mem[o : o+SlotSize : o+SlotSize]
}
func (r *Region) Slots() []byte { return r.Mem[slotOff : slotOff+MaxBatch*SlotSize] }

// Plugin status values of a batch.
const (
	StatusOK = 0
	// StatusBad: the plugin found the request malformed.
	StatusBad = 1
)

// Reset clears the control words (before a new plugin process starts).
func (r *Region) Reset() {
	r.Req().Store(0)
	r.Resp().Store(0)
	r.PluginSleeps().Store(0)
	r.HostSleeps().Store(0)
	r.SetCount(0)
	r.SetStatus(0)
}

// Desc is one packet descriptor.
type Desc []byte

func (d Desc) Off() int             { return int(binary.LittleEndian.Uint16(d[dOff:])) }
func (d Desc) Len() int             { return int(binary.LittleEndian.Uint16(d[dLen:])) }
func (d Desc) Port() uint16         { return binary.LittleEndian.Uint16(d[dPort:]) }
func (d Desc) L3() uint16           { return binary.LittleEndian.Uint16(d[dL3:]) }
func (d Desc) InDevice() uint16     { return binary.LittleEndian.Uint16(d[dInDevice:]) }
func (d Desc) InQueue() uint16      { return binary.LittleEndian.Uint16(d[dInQueue:]) }
func (d Desc) FlowHash() uint32     { return binary.LittleEndian.Uint32(d[dFlowHash:]) }
func (d Desc) SetOff(v int)         { binary.LittleEndian.PutUint16(d[dOff:], uint16(v)) }
func (d Desc) SetLen(v int)         { binary.LittleEndian.PutUint16(d[dLen:], uint16(v)) }
func (d Desc) SetPort(v uint16)     { binary.LittleEndian.PutUint16(d[dPort:], v) }
func (d Desc) SetL3(v uint16)       { binary.LittleEndian.PutUint16(d[dL3:], v) }
func (d Desc) SetInDevice(v uint16) { binary.LittleEndian.PutUint16(d[dInDevice:], v) }
func (d Desc) SetInQueue(v uint16)  { binary.LittleEndian.PutUint16(d[dInQueue:], v) }
func (d Desc) SetFlowHash(v uint32) { binary.LittleEndian.PutUint32(d[dFlowHash:], v) }

// Bell is an eventfd doorbell. Ring adds one; Clear reads (and resets) the
// counter. The eventfd is blocking; waits go through ppoll with a timeout.
type Bell struct {
	FD  int
	buf [8]byte
}

// NewBell makes a blocking eventfd (close-on-exec: it reaches a child only
// through ExtraFiles, which clears the flag on the child's copy).
func NewBell() (*Bell, error) {
	fd, err := unix.Eventfd(0, unix.EFD_CLOEXEC)
	if err != nil {
		return nil, fmt.Errorf("eventfd: %w", err)
	}
	return &Bell{FD: fd}, nil
}

var one = [8]byte{1}

// Ring wakes the other side.
func (b *Bell) Ring() {
	unix.Write(b.FD, one[:])
}

// Clear consumes pending rings without blocking if the bell is readable;
// call it only after poll reported it readable (a blocking eventfd read
// with a zero counter would block).
func (b *Bell) Clear() {
	unix.Read(b.FD, b.buf[:])
}

// Close closes the eventfd.
func (b *Bell) Close() error { return unix.Close(b.FD) }
