// Package rss reads and sets a network device's receive-side scaling (RSS)
// configuration — its Toeplitz hash key and indirection table — through
// the ethtool ioctl (ETHTOOL_GRSSH / ETHTOOL_SRSSH), and computes the
// queue a packet lands on from them, as the NIC does: Toeplitz hash of the
// IPv4 addresses and ports, indirection table entry hash % table size.
// With a symmetric key (SymmetricKey: 0x6d5a repeated) both directions of
// a flow hash the same, so they land on one queue.
package rss
