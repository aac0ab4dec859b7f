package main

import (
	"bytes"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"golang.org/x/sys/unix"

	"github.com/junction-dataplane/junction/internal/control"
)

// checkControlFree refuses to start a second forwarder on a control
// socket a live one serves: two `systemctl start`s of one unit instance
// are one to systemd, but the same config started by hand beside its
// service would open the same interfaces twice (an afpacket device would
// see every frame twice and send both answers). It runs before any device
// is opened and names the process that holds the socket, from the
// socket's own peer credentials. A socket nobody answers on (left by a
// forwarder that died) is free: Listen replaces it.
func checkControlFree(path string) error {
	c, err := net.DialTimeout("unix", path, time.Second)
	if err != nil {
		return nil
	}
	pid := peerPID(c.(*net.UnixConn))
	c.Close()
	return fmt.Errorf("control socket %s: %s is serving it; two forwarders on one graph would open its devices twice. %s, or give this one another -control PATH",
		path, holder(pid), stopHint(path))
}

// checkGraphNotRunning refuses to run the graph file config when the
// forwarder serving its default socket runs that very file: the graph
// started by hand beside its service (`forwarder run -config
// /etc/junction/gw.toml` while junction@gw runs). A forwarder there that
// runs another file of the same base name, or this file in another
// network namespace, is no reason to refuse: this one runs without a
// control socket, with a warning (runControl).
func checkGraphNotRunning(config string) error {
	if config == "" {
		return nil // the embedded graph: synthetic devices only
	}
	sock := control.DefaultPath(config)
	c, err := net.DialTimeout("unix", sock, time.Second)
	if err != nil {
		return nil
	}
	pid := peerPID(c.(*net.UnixConn))
	c.Close()
	s, err := controlSnapshot(sock)
	if err != nil {
		return nil // cannot tell which file it runs
	}
	theirs := s.Graph.File
	if !filepath.IsAbs(theirs) && pid > 0 {
		// Relative to where that forwarder was started.
		cwd, err := os.Readlink("/proc/" + strconv.Itoa(pid) + "/cwd")
		if err != nil {
			return nil
		}
		theirs = filepath.Join(cwd, theirs)
	}
	a, err1 := os.Stat(config)
	b, err2 := os.Stat(theirs)
	if err1 != nil || err2 != nil || !os.SameFile(a, b) {
		return nil
	}
	if otherNetns(pid) {
		return nil // its interfaces are another namespace's, not these
	}
	return fmt.Errorf("%s: %s runs this graph already (control socket %s); two forwarders on one graph would open its devices twice. %s, or give this one another -control PATH",
		config, holder(pid), sock, stopHint(sock))
}

// otherNetns says whether process pid is known to be in another network
// namespace than this process (one graph file run in two namespaces, as
// the end-to-end tests and containers do, opens two sets of interfaces).
func otherNetns(pid int) bool {
	if pid <= 0 {
		return false
	}
	theirs, err1 := os.Readlink("/proc/" + strconv.Itoa(pid) + "/ns/net")
	ours, err2 := os.Readlink("/proc/self/ns/net")
	return err1 == nil && err2 == nil && theirs != ours
}

// holder names the process serving a control socket.
func holder(pid int) string {
	if pid <= 0 {
		return "another forwarder"
	}
	who := fmt.Sprintf("forwarder process %d", pid)
	if cmd := cmdline(pid); cmd != "" {
		who += " (" + cmd + ")"
	}
	return who
}

// stopHint says how to stop the forwarder on a control socket: the
// service's unit when the socket is one of the service's.
func stopHint(sock string) string {
	if filepath.Dir(sock) == control.DefaultDir {
		return fmt.Sprintf("Stop that one first (systemctl stop junction@%s, if it runs as the service)", strings.TrimSuffix(filepath.Base(sock), ".sock"))
	}
	return "Stop that one first"
}

// peerPID is the process at the other end of a unix socket (SO_PEERCRED:
// the listener's, for a connection to a listening socket), or 0.
func peerPID(c *net.UnixConn) int {
	raw, err := c.SyscallConn()
	if err != nil {
		return 0
	}
	var cred *unix.Ucred
	raw.Control(func(fd uintptr) {
		cred, _ = unix.GetsockoptUcred(int(fd), unix.SOL_SOCKET, unix.SO_PEERCRED)
	})
	if cred == nil {
		return 0
	}
	return int(cred.Pid)
}

// cmdline is a process's command line, its arguments separated by spaces,
// or "" when /proc does not say.
func cmdline(pid int) string {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/cmdline")
	if err != nil {
		return ""
	}
	return string(bytes.TrimSpace(bytes.ReplaceAll(bytes.TrimRight(b, "\x00"), []byte{0}, []byte{' '})))
}
