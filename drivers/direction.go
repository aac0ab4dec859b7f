package drivers

// Directional is implemented by driver configs that may be set to only
// receive or only transmit (pcap: a read file, a write file, or both).
// forwarder check warns about a FromDevice of a device that cannot
// receive (it never gets a packet) and a ToDevice of one that cannot
// transmit (every packet sent is dropped).
type Directional interface {
	Directions() (receive, transmit bool)
}
