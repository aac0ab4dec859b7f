package netns

import (
	"fmt"
	"net"
	"time"

	"golang.org/x/sys/unix"
)

// Raw is an AF_PACKET socket bound to one interface of a namespace, for
// tests that put frames on a wire or read what arrives, below any IP stack.
type Raw struct {
	fd      int
	ifindex int
}

// Raw opens a raw packet socket on ifname inside the namespace (all
// protocols, the interface only). Close it when done.
func (ns *NS) Raw(ifname string) (*Raw, error) {
	r := &Raw{fd: -1}
	err := ns.Do(func() error {
		ifi, err := net.InterfaceByName(ifname)
		if err != nil {
			return err
		}
		fd, err := unix.Socket(unix.AF_PACKET, unix.SOCK_RAW|unix.SOCK_CLOEXEC, int(htons(unix.ETH_P_ALL)))
		if err != nil {
			return err
		}
		if err := unix.Bind(fd, &unix.SockaddrLinklayer{Protocol: htons(unix.ETH_P_ALL), Ifindex: ifi.Index}); err != nil {
			unix.Close(fd)
			return err
		}
		// Tests read after sending a burst: room for thousands of frames.
		_ = unix.SetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_RCVBUFFORCE, 16<<20)
		r.fd, r.ifindex = fd, ifi.Index
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("netns: raw socket on %s in %s: %w", ifname, ns.Name, err)
	}
	return r, nil
}

// MustRaw is Raw that fails the test on error and closes the socket in
// the environment's cleanup.
func (ns *NS) MustRaw(ifname string) *Raw {
	ns.env.t.Helper()
	r, err := ns.Raw(ifname)
	if err != nil {
		ns.env.t.Fatal(err)
	}
	ns.env.t.Cleanup(func() { r.Close() })
	return r
}

func htons(v uint16) uint16 { return v<<8 | v>>8 }

// Send writes one Ethernet frame (without FCS) to the interface.
func (r *Raw) Send(frame []byte) error {
	return unix.Sendto(r.fd, frame, 0, &unix.SockaddrLinklayer{Ifindex: r.ifindex, Halen: 6})
}

// Recv returns the next frame received or sent on the interface
// (outgoing frames are skipped: only PACKET_OUTGOING is filtered), or an
// error after timeout.
func (r *Raw) Recv(timeout time.Duration) ([]byte, error) {
	deadline := time.Now().Add(timeout)
	buf := make([]byte, 65536)
	for {
		left := time.Until(deadline)
		if left <= 0 {
			return nil, fmt.Errorf("netns: no frame within %v", timeout)
		}
		tv := unix.NsecToTimeval(left.Nanoseconds())
		if err := unix.SetsockoptTimeval(r.fd, unix.SOL_SOCKET, unix.SO_RCVTIMEO, &tv); err != nil {
			return nil, err
		}
		n, from, err := unix.Recvfrom(r.fd, buf, 0)
		if err == unix.EAGAIN || err == unix.EINTR {
			continue
		}
		if err != nil {
			return nil, err
		}
		if ll, ok := from.(*unix.SockaddrLinklayer); ok && ll.Pkttype == unix.PACKET_OUTGOING {
			continue
		}
		return append([]byte(nil), buf[:n]...), nil
	}
}

// Close closes the socket.
func (r *Raw) Close() error {
	if r.fd < 0 {
		return nil
	}
	err := unix.Close(r.fd)
	r.fd = -1
	return err
}
