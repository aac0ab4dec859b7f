// Package extest has the helpers of the examples' end-to-end tests:
// building a plugin, writing and reading pcap files, and instantiating a
// graph from configs/plugins/ in a temporary directory.
package extest
