// Package elementtest is the test harness for elements: it builds one
// instance of an element type on a private pool, binds every output port to a
// Recorder, and lets a test push frames and read what came out of each port
// and which drops were counted — CoreDNS's dnstest.Recorder, for batches.
package elementtest
