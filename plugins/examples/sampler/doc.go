// Package sampler is an example Junction plugin element, FlowSampler: it
// passes every packet on unchanged and writes 1 in N of them — every Nth
// packet, or every packet of 1 in N flows — to a pcap file. Writing files
// is a good reason to run an element out of process: a slow disk or a full
// file system stalls or kills the plugin, never the forwarder.
//
// The plugin executable is cmd/sampler; this package holds its logic so
// that tests can check it directly.
package sampler
