// Package tap is the tap driver: a kernel-side twin of a forwarded port,
// through which the router's own control plane (BGP, BFD, OSPF, SSH,
// DHCP and DNS servers, neighbour discovery) talks to the wire while the
// graph holds the port.
//
// Why a TAP twin (VPP's linux-cp, not Click's ToHost or an XDP pass): a
// port the graph holds is invisible to the kernel's stack whatever its
// driver (AF_XDP takes every frame in XDP; AF_PACKET copies them, but the
// kernel would then answer and forward beside the graph), so daemons
// need an interface of their own that looks like the port. The twin has
// the port's MAC and MTU and follows its link state, and the driver puts
// the device's addresses on it, so BIRD, FRR, dnsmasq or sshd bind to it
// unchanged and the kernel's routes name it (IPLookup source = "kernel"
// maps it back to the port with its interfaces key). The graph decides
// what reaches it: the frames for the router that no element consumes,
// through a policer (HostPunt), and copies of ARP and neighbour discovery
// so that the kernel learns its neighbours from the same frames as
// ARPQuerier and NDPQuerier. What the kernel sends on the twin comes out
// of the device's RX queue as whole Ethernet frames (it resolved the
// neighbour itself) and the graph sends them out of the port. Leaving the
// port to the kernel with an XDP pass would tie the design to one
// driver; a TAP works under every driver, costs a system call per frame
// only on the punt path, which the policer bounds, and by default
// disappears with the forwarder, so a crashed forwarder leaves no
// half-configured interface behind. With the persist key the TAP is
// persistent (TUNSETPERSIST) and the next start attaches to it by name,
// so the daemons keep their addresses and sockets across a restart.
//
// RX: one queue, the TAP's file descriptor in non-blocking mode, read
// frame by frame into the queue's pool (read(2) on a TAP returns one
// frame; there is no batch call). TX: one write(2) per frame, from any
// worker (the kernel serialises them per descriptor; no lock here).
// Without IFF_VNET_HDR the kernel hands complete frames with their
// checksums done, and takes them the same way.
package tap
