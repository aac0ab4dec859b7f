// Package e2e holds the end-to-end tests of the forwarder: real Linux hosts
// in network namespaces ping, traceroute, curl and iperf3 through a
// forwarder process running configs/router-veth.toml (root only).
package e2e
