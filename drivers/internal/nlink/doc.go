// Package nlink is the small part of rtnetlink, ethtool and bpf(2) that the
// afxdp and afpacket drivers need: look an interface up by name (index,
// MAC, queue counts, attached XDP program), attach and detach XDP programs
// (netlink, or a BPF link that the kernel removes when the process dies),
// and read an interface's channel counts. It is written on
// golang.org/x/sys/unix only.
//
// Sockets belong to the network namespace of the thread that creates them:
// a Conn opened while the device is opened (inside the interface's
// namespace) keeps working on that namespace from any thread later, which
// is what lets Close detach a program from anywhere.
package nlink
