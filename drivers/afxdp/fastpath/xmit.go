package fastpath

import (
	"encoding/binary"
	"errors"
	"fmt"
	"github.com/cilium/ebpf"
	"github.com/junction-dataplane/junction/drivers/kfeature"
	"time"

	"golang.org/x/sys/unix"
)

// XmitProbe asks the kernel whether a device takes frames that XDP
// programs redirect to it: the NETDEV_XDP_ACT_NDO_XMIT bit of its XDP
// features (generic netlink family "netdev", Linux 6.3). The kernel
// refuses to redirect to a device without it, and keeps the bit current:
// a veth has it exactly while its peer runs an XDP program or has GRO
// on. Asking is lossless, unlike trying a frame; the watcher
// (WatchRedirects) still catches the refusals the bit does not predict.
//
// The probe's socket belongs to the network namespace of the thread that
// opened it, for its whole life: open it there.
type XmitProbe struct {
	fd     int
	family uint16
	seq    uint32
	buf    []byte
}

// ErrNoXDPFeatures is NewXmitProbe's error on kernels without the
// "netdev" generic netlink family (before 6.3).
var ErrNoXDPFeatures = errors.New("fastpath: the kernel does not report XDP features (generic netlink family \"netdev\", Linux 6.3)")

// Generic netlink constants of the "netdev" family (uapi linux/netdev.h)
// and the controller, absent from x/sys/unix.
const (
	netdevCmdDevGet      = 1
	netdevAttrIfindex    = 1
	netdevAttrXDPFeature = 3
	netdevXDPActBasic    = 1
	netdevXDPActNdoXmit  = 4
	ctrlAttrFamilyName   = 2
	genlHdrLen           = 4
)

func init() {
	// The feature probe (forwarder features, check): whether the
	// kernel reports XDP features at all.
	kfeature.Register(kfeature.XDPFeatures, func() error {
		p, err := newXmitProbe()
		if errors.Is(err, ErrNoXDPFeatures) {
			return fmt.Errorf("%w: %w", err, ebpf.ErrNotSupported)
		}
		if err == nil {
			p.Close()
		}
		return err
	})
}

// NewXmitProbe opens a generic netlink socket and resolves the "netdev"
// family. It returns ErrNoXDPFeatures also when JUNCTION_KERNEL_MISSING
// names xdp_features_netlink (kfeature).
func NewXmitProbe() (*XmitProbe, error) {
	if s, _ := kfeature.StatusOf(kfeature.XDPFeatures); s == kfeature.Emulated {
		return nil, ErrNoXDPFeatures
	}
	return newXmitProbe()
}

func newXmitProbe() (*XmitProbe, error) {
	fd, err := unix.Socket(unix.AF_NETLINK, unix.SOCK_RAW|unix.SOCK_CLOEXEC, unix.NETLINK_GENERIC)
	if err != nil {
		return nil, fmt.Errorf("fastpath: generic netlink socket: %w", err)
	}
	p := &XmitProbe{fd: fd, buf: make([]byte, 8192)}
	tv := unix.NsecToTimeval(int64(time.Second))
	if err := unix.SetsockoptTimeval(fd, unix.SOL_SOCKET, unix.SO_RCVTIMEO, &tv); err != nil {
		p.Close()
		return nil, err
	}
	if err := unix.Bind(fd, &unix.SockaddrNetlink{Family: unix.AF_NETLINK}); err != nil {
		p.Close()
		return nil, err
	}
	attrs, err := p.request(unix.GENL_ID_CTRL, unix.CTRL_CMD_GETFAMILY, attr(nil, ctrlAttrFamilyName, append([]byte("netdev"), 0)))
	if errors.Is(err, unix.ENOENT) {
		p.Close()
		return nil, ErrNoXDPFeatures
	}
	if err != nil {
		p.Close()
		return nil, fmt.Errorf("fastpath: resolving the netdev netlink family: %w", err)
	}
	if v, ok := attrs[unix.CTRL_ATTR_FAMILY_ID]; ok && len(v) >= 2 {
		p.family = binary.NativeEndian.Uint16(v)
	}
	if p.family == 0 {
		p.Close()
		return nil, ErrNoXDPFeatures
	}
	return p, nil
}

// Takes reports whether the device ifindex takes redirected frames.
func (p *XmitProbe) Takes(ifindex int) (bool, error) {
	f, err := p.features(ifindex)
	return f&netdevXDPActNdoXmit != 0, err
}

// NativeXDP reports whether the device ifindex runs XDP programs in its
// driver (NETDEV_XDP_ACT_BASIC: mode = "native" can attach).
func (p *XmitProbe) NativeXDP(ifindex int) (bool, error) {
	f, err := p.features(ifindex)
	return f&netdevXDPActBasic != 0, err
}

// features returns the device's XDP features (NETDEV_A_DEV_XDP_FEATURES).
func (p *XmitProbe) features(ifindex int) (uint64, error) {
	var v [4]byte
	binary.NativeEndian.PutUint32(v[:], uint32(ifindex))
	attrs, err := p.request(p.family, netdevCmdDevGet, attr(nil, netdevAttrIfindex, v[:]))
	if err != nil {
		return 0, fmt.Errorf("fastpath: XDP features of ifindex %d: %w", ifindex, err)
	}
	f, ok := attrs[netdevAttrXDPFeature]
	if !ok || len(f) < 8 {
		return 0, fmt.Errorf("fastpath: XDP features of ifindex %d: not in the kernel's answer", ifindex)
	}
	return binary.NativeEndian.Uint64(f), nil
}

// Close closes the socket; idempotent.
func (p *XmitProbe) Close() error {
	if p == nil || p.fd < 0 {
		return nil
	}
	err := unix.Close(p.fd)
	p.fd = -1
	return err
}

func attr(b []byte, typ uint16, val []byte) []byte {
	var h [4]byte
	binary.NativeEndian.PutUint16(h[0:], uint16(4+len(val)))
	binary.NativeEndian.PutUint16(h[2:], typ)
	b = append(b, h[:]...)
	b = append(b, val...)
	for len(b)%4 != 0 {
		b = append(b, 0)
	}
	return b
}

// request sends one generic netlink request and returns the top-level
// attributes of its answer.
func (p *XmitProbe) request(family uint16, cmd uint8, attrs []byte) (map[uint16][]byte, error) {
	if p.fd < 0 {
		return nil, errors.New("fastpath: probe closed")
	}
	p.seq++
	msg := make([]byte, unix.NLMSG_HDRLEN+genlHdrLen, unix.NLMSG_HDRLEN+genlHdrLen+len(attrs))
	msg = append(msg, attrs...)
	binary.NativeEndian.PutUint32(msg[0:], uint32(len(msg)))
	binary.NativeEndian.PutUint16(msg[4:], family)
	binary.NativeEndian.PutUint16(msg[6:], unix.NLM_F_REQUEST)
	binary.NativeEndian.PutUint32(msg[8:], p.seq)
	msg[unix.NLMSG_HDRLEN] = cmd
	msg[unix.NLMSG_HDRLEN+1] = 1 // version
	if err := unix.Sendto(p.fd, msg, 0, &unix.SockaddrNetlink{Family: unix.AF_NETLINK}); err != nil {
		return nil, err
	}
	for {
		n, _, err := unix.Recvfrom(p.fd, p.buf, 0)
		if err != nil {
			return nil, err
		}
		b := p.buf[:n]
		for len(b) >= unix.NLMSG_HDRLEN {
			l := int(binary.NativeEndian.Uint32(b[0:]))
			typ := binary.NativeEndian.Uint16(b[4:])
			seq := binary.NativeEndian.Uint32(b[8:])
			if l < unix.NLMSG_HDRLEN || l > len(b) {
				return nil, errors.New("malformed netlink message")
			}
			body := b[unix.NLMSG_HDRLEN:l]
			b = b[min((l+3)&^3, len(b)):]
			if seq != p.seq {
				continue // an answer to an earlier request that timed out
			}
			if typ == unix.NLMSG_ERROR {
				if len(body) < 4 {
					return nil, errors.New("short netlink error")
				}
				if e := int32(binary.NativeEndian.Uint32(body)); e != 0 {
					return nil, unix.Errno(-e)
				}
				continue
			}
			if len(body) < genlHdrLen {
				return nil, errors.New("short generic netlink message")
			}
			out := map[uint16][]byte{}
			a := body[genlHdrLen:]
			for len(a) >= 4 {
				al := int(binary.NativeEndian.Uint16(a[0:]))
				at := binary.NativeEndian.Uint16(a[2:]) & 0x3fff // without NLA_F_NESTED, NLA_F_NET_BYTEORDER
				if al < 4 || al > len(a) {
					break
				}
				out[at] = a[4:al]
				a = a[min((al+3)&^3, len(a)):]
			}
			return out, nil
		}
	}
}
