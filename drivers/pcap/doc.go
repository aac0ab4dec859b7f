// Package pcap provides the pcap driver: frames read from and written to pcap files through gopacket's pure-Go pcapgo.
package pcap
