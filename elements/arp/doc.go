// Package arp provides ARPResponder (and, later, ARPQuerier): the ARP elements.
package arp
