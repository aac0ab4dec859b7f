// Package pcap provides the pcap driver: frames read from and written to pcap files through gopacket's pure-Go pcapgo.
//
// A pcap device reads one file (its single RX queue, drained at the end of
// the file, or replayed with loop) and/or writes every transmitted packet
// to another, which makes golden tests possible: pcap in, graph, pcap out,
// checked by an independent decoder. Only classic pcap with Ethernet link
// type is read (plain or gzip-compressed); pcapng is refused at open with a
// hint to convert it.
//
// A broken file never stops the forwarder with a panic: frames up to the
// damage are delivered, the queue drains, and the error is counted and
// logged once. Frames too long for a packet buffer are skipped and counted.
// Writes from several workers are serialized per batch by a mutex.
//
// The keys are in Doc.
package pcap
