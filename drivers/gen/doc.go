// Package gen provides the gen driver: synthetic traffic built once into reusable frames, and a sink that counts and frees.
//
// A gen device needs no kernel, no interface and no privileges, which is why
// the forwarder's embedded default graph and its benchmarks use it. Each RX
// queue owns a packet pool and a PRNG; Receive copies one prebuilt template
// frame (Ethernet, IPv4, UDP or TCP, checksums valid) into each packet and
// rewrites only the fields that vary — destination address, source address,
// source port — patching both checksums incrementally (RFC 1624), so that
// generating costs a small fraction of what the graph spends on a packet.
// Rate and count are per queue shares of the configured totals; the rate is
// a token bucket read once per batch.
//
// The TX side frees every packet it is given and counts packets and bytes
// per worker, so a gen device that is only written to is a sink.
//
// The keys and their defaults are in its manual page (manual.go; forwarder
// drivers gen).
package gen
