// Package arp provides the ARP elements: ARPResponder answers for the router's
// addresses, ARPQuerier resolves next hops to MACs.
package arp
