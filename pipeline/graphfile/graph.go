package graphfile

import (
	"fmt"
	"net/netip"

	"github.com/junction-dataplane/junction/drivers"
	"github.com/junction-dataplane/junction/elements"
	"github.com/junction-dataplane/junction/packet"
)

// Pos is where something was written: a file and a 1-based line (0 when
// unknown, e.g. for the defaults).
type Pos struct {
	File string
	Line int
}

func (p Pos) String() string {
	if p.Line == 0 {
		return p.File
	}
	return fmt.Sprintf("%s:%d", p.File, p.Line)
}

// Graph is a validated graph file: everything needed to build pipelines,
// with every name resolved and every config decoded and validated.
type Graph struct {
	File string

	// Workers is the number of pipelines (0: one per CPU, resolved when
	// the graph is started); Batch the packets per batch.
	Workers int
	Batch   int
	// Stats is the stats endpoint's listen address ("" = off).
	Stats string

	Devices  []*Device  // in declaration order; Index is the position
	Tables   []*Table   // route tables ([tables.NAME], tables.go)
	Elements []*Element // declared ones first, then inline ones in link order
	Links    []Link
	// Instances are the compound elements used, flattened into Elements
	// and Links: an element of instance "lan" is named "lan/NAME".
	Instances []*Instance
}

// Instance is one use of a compound element (a [compounds.NAME] table).
type Instance struct {
	Name     string // "lan"; nested: "lan/x"
	Compound string // the compound's name
	Parent   string // the instance it lies in ("" for none)
	Pos      Pos    // where it is used
}

// Device is one [devices.NAME] table.
type Device struct {
	Name      string
	Index     int
	Driver    *drivers.Driver
	Config    any // the driver's decoded config
	Addresses []netip.Prefix
	MAC       packet.MAC
	Pos       Pos
}

// Element is one element of the graph.
type Element struct {
	Name      string // declared name, or "Type@N" for an anonymous one
	Anonymous bool
	Type      *elements.Type
	Config    any // decoded, validated config (nil when the type has none)
	In, Out   int // port counts
	Pos       Pos
	// Instance is the compound instance the element lies in ("" for
	// none); Name then starts with Instance + "/".
	Instance string
}

// Link connects output FromPort of From to input ToPort of To.
type Link struct {
	From     string
	FromPort int
	To       string
	ToPort   int
	Pos      Pos
}

// Element returns the element with this name.
func (g *Graph) Element(name string) *Element {
	for _, e := range g.Elements {
		if e.Name == name {
			return e
		}
	}
	return nil
}

// Device returns the device with this name.
func (g *Graph) Device(name string) *Device {
	for _, d := range g.Devices {
		if d.Name == name {
			return d
		}
	}
	return nil
}
