// Package pcaptest writes and reads the pcap files of whole-graph tests:
// frames built by a test go in through the pcap driver, and what a graph
// wrote comes back decoded by gopacket, a decoder independent of ours.
package pcaptest
