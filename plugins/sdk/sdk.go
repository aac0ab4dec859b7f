package sdk

import (
	"fmt"
	"unsafe"

	"github.com/junction-dataplane/junction/conf"
	"github.com/junction-dataplane/junction/plugins/internal/wire"
)

// Doc is an element's manual page (the same sections as a built-in's).
type Doc = conf.Doc

// Key documents one config key.
type Key = conf.Key

// Errorf makes a config error attached to key, which the forwarder reports
// with the file, line and element of the plugin's config table.
func Errorf(key, format string, args ...any) error { return conf.Errorf(key, format, args...) }

// Processor processes batches; it is the plugin-side elements.Element.
// Process is called on one goroutine (locked to its thread) for one batch at
// a time; it must not keep references to packets after it returns.
type Processor interface {
	Process(b *Batch)
}

// Element describes one element type a plugin serves.
type Element struct {
	// Name is what a graph writes as the Plugin's element key.
	Name string
	Doc  Doc
	// Outputs is the number of output ports (≥ 1), unless Ports is set.
	Outputs int
	// Ports, when set, gives the output count for a validated config (an
	// element whose outputs depend on its config).
	Ports func(cfg any) int
	// Reasons names the drop reasons of DropReason(i), at most 6; the
	// forwarder counts each under its name next to its own counters.
	Reasons []string
	// ReadOnly promises that Process never changes frame bytes or
	// lengths: the forwarder then skips copying frames back.
	ReadOnly bool
	// NewConfig returns a pointer to a config struct holding the defaults
	// (fields named by toml tags), or nil for an element without keys. If
	// it implements Validate() error, Validate runs after decoding; return
	// sdk.Errorf(key, ...) to point at a key.
	NewConfig func() any
	// New builds the processor from a validated config.
	New func(cfg any) (Processor, error)
}

// Port values: Send(port) stores the port; drops store wire.Drop|reason.
const genericDrop = wire.Drop | wire.ReasonMask

// Batch is one batch of packets handed over by the forwarder.
type Batch struct {
	// In is the input port the batch arrived on.
	In int
	// Pkts are the packets, each defaulting to output 0.
	Pkts []Packet
}

// Packet is one frame in shared memory and its annotations.
type Packet struct {
	// Data is the frame, in place in the shared region; cap(Data) is the
	// room to grow it (SetLen). Modify it in place; do not replace it
	// (if you do, the SDK copies it back, or drops the packet if it does
	// not fit).
	Data []byte
	// Read-only annotations from the forwarder.
	InDevice, InQueue uint16
	L3                uint16
	FlowHash          uint32

	port uint16
	home *byte // &slot[off]: where Data started
	room int   // bytes from home to the end of the slot
}

// Send sends the packet to output port.
func (p *Packet) Send(port int) {
	if port < 0 || port >= wire.Drop {
		p.port = genericDrop
		return
	}
	p.port = uint16(port)
}

// Drop drops the packet (counted as "plugin drop").
func (p *Packet) Drop() { p.port = genericDrop }

// DropReason drops the packet under Element.Reasons[i].
func (p *Packet) DropReason(i int) {
	if i < 0 || i >= wire.MaxReasons {
		p.port = genericDrop
		return
	}
	p.port = wire.Drop | uint16(i)
}

// Port returns the output port set so far, or -1 if the packet is dropped.
func (p *Packet) Port() int {
	if p.port&wire.Drop != 0 {
		return -1
	}
	return int(p.port)
}

// SetLen changes the frame's length within its buffer. It reports false
// (and changes nothing) if n does not fit.
func (p *Packet) SetLen(n int) bool {
	if n < 0 || n > cap(p.Data) {
		return false
	}
	p.Data = p.Data[:n]
	return true
}

// finish makes sure the frame's bytes are where the forwarder will read
// them and returns its length, or -1 if it cannot be sent.
func (p *Packet) finish() int {
	n := len(p.Data)
	if n > p.room {
		return -1
	}
	if n > 0 && unsafe.SliceData(p.Data) != p.home {
		copy(unsafe.Slice(p.home, p.room), p.Data)
	}
	return n
}

func (e *Element) check() error {
	if e.Name == "" {
		return fmt.Errorf("sdk: element with an empty name")
	}
	if e.New == nil {
		return fmt.Errorf("sdk: element %s has no New", e.Name)
	}
	if e.Ports == nil && e.Outputs < 1 {
		return fmt.Errorf("sdk: element %s has %d outputs, want ≥ 1", e.Name, e.Outputs)
	}
	if len(e.Reasons) > wire.MaxReasons {
		return fmt.Errorf("sdk: element %s declares %d drop reasons, at most %d", e.Name, len(e.Reasons), wire.MaxReasons)
	}
	return nil
}

func (e *Element) info(cfg any) wire.ElementInfo {
	out := e.Outputs
	if e.Ports != nil && cfg != nil {
		out = e.Ports(cfg)
	}
	return wire.ElementInfo{Name: e.Name, Doc: e.Doc, Outputs: out, Reasons: e.Reasons, ReadOnly: e.ReadOnly}
}
