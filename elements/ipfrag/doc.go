// Package ipfrag provides IPReassembler, IP6Reassembler and
// IPFragmenter: IPv4 and IPv6 reassembly before connection tracking and
// NAT, RFC 791 fragmentation on output, and IPv6 datagrams split again
// as their sender split them.
//
// Why reassembly rather than tracking each fragment (first fragment's
// ports applied to the rest): Conntrack, DNAT, SNAT, FastTrackLearn and
// Classifier's port tests all read the transport header, which only the
// first fragment carries, and every one of them would need a second path
// for fragments that carry none (NAT must not write "ports" into a later
// fragment's payload). A whole datagram needs nothing from them: as
// Linux's defragmentation before conntrack, the graph between
// IPReassembler and IPFragmenter sees ordinary packets, and the fragment
// path costs the unfragmented traffic one test of the IPv4 flags. The
// price is a datagram-sized buffer per datagram in reassembly (a pool of
// its own, packet.NewPoolSize) and fragmenting again on output, which a
// NAT must be able to do anyway: a translated datagram may cross a link
// with a smaller MTU.
//
// Steering: fragments hash without ports (packet.FlowHashFrame), so all
// of a datagram's fragments reach one worker, but not necessarily the one
// that owns the datagram's flow (its 5-tuple's hash). The reassembler
// hands a finished datagram whose flow belongs to another worker to that
// worker's instance over a lock-free ring (handoff.go), into a buffer
// that worker lent, as FromDevice's spreading hands frames; the owner
// sends it on. With two workers half the fragmented datagrams take that
// path (40 of 80 in TestNATGatewayFragments, cmd/forwarder/e2e; 62 of 80
// with four workers), for the
// price of one copy of the datagram (benchmarks/nat.md, "Fragments");
// steering fragments by the 5-tuple instead is impossible before
// the first fragment has been seen, and holding the later fragments in
// FromDevice would hold device frames for up to the reassembly timeout.
//
// IPv6 takes the same path (IP6Reassembler: the same table, keyed by
// addresses and the 32-bit identification; a 60 s timeout). What differs
// is the way out: a router must not fragment IPv6 (RFC 8200 section 5),
// so rather than splitting a datagram to fit the link, IPFragmenter
// splits a reassembled one at the size of its sender's largest fragment,
// which the reassembler records in the packet's scratch annotation
// (frag6.go), as Linux's nf_defrag_ipv6 keeps frag_max_size for
// ip6_fragment; a datagram whose fragments exceed the link gets packet
// too big. The alternative, tracking fragments and forwarding them as
// they came, would need the tracker's and the filter's second path that
// reassembly avoids. FromDevice hashes an IPv6 fragment by its addresses
// and the fragment header's protocol number (no ports), so a datagram's
// fragments meet on one worker; the reassembled datagram has no fragment
// header and hashes with its ports, which names its flow's owner.
package ipfrag
