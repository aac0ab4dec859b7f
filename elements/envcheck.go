package elements

import "github.com/junction-dataplane/junction/drivers"

// DeviceInfos tells what a device of the graph will be once opened (its
// MAC, its addresses), before anything is opened: the pipeline's
// validation pass asks the drivers (drivers.Check).
type DeviceInfos func(name string) (drivers.Info, bool)

// EnvChecker is implemented by configs whose validity depends on the
// devices they name (ARPQuerier needs a device with a MAC). The pipeline's
// validation pass, which forwarder check and run share, calls CheckEnv
// before any device is opened, so that check raises what New would; the
// error should name the key (Errorf) and read as New's does.
type EnvChecker interface {
	CheckEnv(devices DeviceInfos) error
}

// Upstream is implemented by configs that work only on packets an element
// of another type has seen first: SNAT and DNAT, and a Classifier with a
// "ct" rule, read the connection-tracking state Conntrack annotates. It
// returns that type and why ("" when this config needs none). forwarder
// check warns about a path from a source that reaches the element without
// passing one.
type Upstream interface {
	NeedsUpstream() (typ, why string)
}

// Warner is implemented by configs that are valid but cannot do all they
// say (a Classifier rule after a catch-all never matches). forwarder
// check prints each warning, located at the element.
type Warner interface {
	Warnings() []string
}
