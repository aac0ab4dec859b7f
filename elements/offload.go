package elements

// OffloadNamer is implemented by configs whose offload key names devices
// whose in-kernel fast path they program (IPLookup, FastTrack). The
// pipeline's validation pass, shared by forwarder check and run, verifies
// before any device is opened that each named device exists and runs a
// fast path (drivers.Info.FastPath), as Context.FastPathDevices does when
// the element is built.
type OffloadNamer interface {
	// OffloadDevices returns the key's entries ("" for a port that is
	// not offloaded).
	OffloadDevices() []string
}
