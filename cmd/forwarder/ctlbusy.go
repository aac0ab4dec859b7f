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
	defer c.Close()
	who := "another forwarder"
	if pid := peerPID(c.(*net.UnixConn)); pid > 0 {
		who = fmt.Sprintf("forwarder process %d", pid)
		if cmd := cmdline(pid); cmd != "" {
			who += " (" + cmd + ")"
		}
	}
	stop := "Stop that one first"
	if filepath.Dir(path) == control.DefaultDir {
		stop += fmt.Sprintf(" (systemctl stop junction@%s, if it runs as the service)", strings.TrimSuffix(filepath.Base(path), ".sock"))
	}
	return fmt.Errorf("control socket %s: %s is serving it; two forwarders on one graph would open its devices twice. %s, or give this one another -control PATH",
		path, who, stop)
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
