// Package drivers defines a packet I/O device (the Device interface) and the
// registry of drivers. Drivers live in sub-packages: gen (synthetic traffic
// and a counting sink), pcap (files through gopacket's pcapgo), and the
// kernel interfaces of later work (afxdp, afpacket). A driver may register
// a CheckFunc (RegisterCheck): what Open would find wrong with the
// environment, found without opening anything, for forwarder check.
package drivers
