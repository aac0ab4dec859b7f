// Command xdpbounce is a measuring tool for benchmarks/e2e-router.sh, not
// part of the router. It attaches an XDP program to one interface and
// detaches it on SIGINT/SIGTERM (or, with -tc, a TC ingress program):
//
//	xdpbounce -from lan0 -to wan0   redirect every frame, unchanged, to wan0
//	                                in the kernel (XDP_BOUNCE=1: the bound of
//	                                an in-kernel fast path on these links, as
//	                                benchmarks/veth-null.toml bounds AF_XDP)
//	xdpbounce -from eth0 -drop      drop IPv4 frames, pass the rest (ARP) to
//	                                the kernel: a sink that costs no thread
//	                                (XDP_SINK=1; the count is the interface's
//	                                XDP drop counter, ethtool -S)
//	xdpbounce -from lan0 -to wan0 -tc peer|egress [-pass]
//	                                redirect every frame at TC ingress (tcx)
//	                                instead: into wan0's veth peer
//	                                (bpf_redirect_peer) or out of wan0
//	                                (bpf_redirect); -pass also attaches an
//	                                XDP program passing every frame, as an
//	                                AF_XDP driver's fast path does for the
//	                                frames it forwards through TC
//	                                (e2e-tcp.sh BOUNDS=1 BOUNDS_TC=1)
package main
