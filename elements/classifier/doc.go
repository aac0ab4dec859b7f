// Package classifier provides Classifier, which splits a batch by a compiled rule language over Ethernet, ARP, IP and L4 headers.
package classifier
