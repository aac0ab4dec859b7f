// Package host provides HostPunt, which hands the traffic for the router
// itself that the graph does not consume to the kernel's stack (through
// a tap device, drivers/tap), policed per class as a router's
// control-plane policing does, so that the routing daemons, sshd and
// dnsmasq running on the box see their packets and a flood aimed at the
// router cannot take the forwarding workers or the daemons down with it.
package host
