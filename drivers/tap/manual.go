package tap

import (
	"strconv"

	"github.com/junction-dataplane/junction/conf"
)

// manual is the driver's manual page (forwarder drivers tap).
func manual() conf.Doc {
	return conf.Doc{
		Summary: "a kernel-side twin of a forwarded port (a TAP interface), through which the router's own daemons reach the wire",
		Text: `The forwarder creates the TAP interface when it opens the device and it disappears when the forwarder exits, unless persist is set. The TAP takes the twin's MAC (the mac key overrides it) and MTU (the mtu key overrides it), the device's addresses key (put on the TAP, IPv6 ones without duplicate address detection: the graph already answers for them on the port), and follows the twin's link state (carrier on while the twin is operationally up) and MTU changes for as long as it is open. Give the twin itself no addresses: the kernel's view of the port is the TAP.

Routing daemons (BIRD, FRR), sshd, dnsmasq and the kernel's own neighbour tables then see the TAP as the port: the kernel's routes name it (IPLookup source = "kernel" with the TAP in its interfaces key maps them back to the port's output), and the graph decides what reaches it. The usual wiring, for a port wan and its twin wanh:

  "FromDevice(wanh) -> ToDevice(wan)"  what the kernel sends leaves by the port
  "... -> hp :: HostPunt(wan) -> ToDevice(wanh)"  traffic for the router the graph does not consume, policed per class

and copies of ARP and neighbour discovery frames (Tee) into the HostPunt, so that the kernel learns its neighbours from the frames ARPQuerier and NDPQuerier learn from (configs/bgp-router.toml is the whole graph; docs/control-plane.md explains it).

With persist = true the TAP outlives the forwarder (TUNSETPERSIST): a restart, an upgrade or a crash leaves the interface, its ifindex, its addresses, the kernel's routes and neighbours on it, and the daemons' sockets bound to its addresses in place, and the next start adopts it (attaches to it by name, sets what the configuration says, changes nothing that already matches). Between the two runs the TAP has no carrier (the kernel turns it off when its last descriptor closes) and what the kernel sends on it is dropped; a BGP session over it survives a restart shorter than its hold time (and BFD's detection time) if the daemon does not close sessions on a carrier loss (BIRD's check link off; FRR's no bgp fast-external-failover). Addresses the configuration no longer lists stay on a persistent TAP until removed by hand (ip addr del); a start without persist clears the flag, so the TAP goes away at that run's exit (ip link del removes it at once).

The TAP is a syscall per frame each way: it is for the router's own traffic, which HostPunt bounds, not for transit. Needs root (CAP_NET_ADMIN) and /dev/net/tun; following the link state needs Linux 5.0 (TUNSETCARRIER).`,
		Queues: `One RX queue, the TAP's descriptor (non-blocking, waited on with poll(2) when the worker sleeps), with a pool of ` + strconv.Itoa(PoolSize) + ` packets. TX from any worker: one write(2) per frame.`,
		Keys: []conf.Key{
			{Name: "interface", Type: "string", Required: true, Doc: `the TAP interface to create, e.g. "wan0h"; an existing TAP of that name is attached to, any other interface of that name is an error.`},
			{Name: "twin", Type: "string", Doc: `the forwarded port's interface, e.g. "wan0": its MAC and MTU are the TAP's and its link state is followed. Empty: the TAP keeps the kernel's random MAC (or the mac key's) and stays up.`},
			{Name: "mtu", Type: "int", Default: "0", Doc: "the TAP's MTU, 68.." + strconv.Itoa(maxMTU) + "; 0: the twin's (1500 without a twin)."},
			{Name: "persist", Type: "bool", Default: "false", Doc: "keep the TAP, with its addresses and the daemons' sockets on it, when the forwarder exits, and adopt it at the next start; false: it is removed at exit (and an earlier run's persistent TAP of this name too)."},
		},
		Stats: `rx_packets, rx_bytes (frames the kernel sent on the TAP), tx_packets, tx_bytes (frames handed to the kernel), tx_errors (write refused: the TAP is down, or a frame shorter than an Ethernet header), tx_dropped_too_long (frames longer than the TAP's MTU plus the Ethernet header), rx_errors (read errors other than "nothing queued"), rx_pool_empty (a poll found no free packet: the frame stays queued in the kernel; an event, not a loss), carrier_changes (times the twin's link state was copied to the TAP).`,
		Example: `[devices.wanh]
driver    = "tap"
interface = "wan0h"
twin      = "wan0"
addresses = ["10.2.0.1/24", "2001:db8:2::1/64"]`,
		SeeAlso: "HostPunt (what reaches the TAP), IPLookup source = \"kernel\" (routes the daemons install), afxdp and afpacket (the port itself)",
	}
}
