// Package all registers every standard element family; import it for its
// side effects. A custom build imports it (or the families it wants) plus
// its own element packages.
//
// The Plugin element (plugins/host) is not among them: it links
// go-plugin, gRPC and protobuf, so a binary that runs plugins imports
// plugins/host itself (cmd/forwarder does), and one that does not
// (cmd/pktgen) stays without them.
package all
