// Package host joins the forwarder to the router's own control plane, the
// kernel's stack behind the tap twins of the ports (drivers/tap):
// HostPunt hands it the traffic for the router that the graph does not
// consume, policed per class as a router's control-plane policing does,
// so that the routing daemons, sshd and dnsmasq running on the box see
// their packets and a flood aimed at the router cannot take the
// forwarding workers or the daemons down with it; KernelNeighbors
// mirrors the kernel's neighbour table on a twin into the graph's
// ARPQuerier or NDPQuerier.
package host
