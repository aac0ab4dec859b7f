package nlink

import (
	"encoding/binary"
	"errors"
	"fmt"
	"net"
	"sync/atomic"
	"syscall"
	"unsafe"

	"golang.org/x/sys/unix"
)

// Link is what the drivers need to know about an interface.
type Link struct {
	Index int
	Name  string
	MAC   net.HardwareAddr
	MTU   int
	Up    bool
	// Running: IFF_RUNNING, the link has carrier (a veth: both ends up).
	Running  bool
	RxQueues int // allocated RX queues (IFLA_NUM_RX_QUEUES)
	TxQueues int
	// Kind is the link's type as `ip -d link` names it (IFLA_INFO_KIND:
	// "veth", "bridge", ...); "" for devices without one (NICs, lo).
	Kind string
	// XDPAttached is the kernel's XDP_ATTACHED_* mode (0 = none, 1 drv,
	// 2 skb, 3 hw, 4 several); XDPProgID the attached program, and
	// XDPDrvProgID / XDPSkbProgID per mode when several are attached.
	XDPAttached  uint8
	XDPProgID    uint32
	XDPDrvProgID uint32
	XDPSkbProgID uint32
}

// ErrNoLink is returned (wrapped) when the interface does not exist.
var ErrNoLink = errors.New("no such interface")

// Conn is an rtnetlink socket.
type Conn struct {
	fd  int
	seq atomic.Uint32
}

// Open opens an rtnetlink socket in the calling thread's network namespace.
func Open() (*Conn, error) {
	fd, err := unix.Socket(unix.AF_NETLINK, unix.SOCK_RAW|unix.SOCK_CLOEXEC, unix.NETLINK_ROUTE)
	if err != nil {
		return nil, fmt.Errorf("netlink socket: %w", err)
	}
	// Extended acks carry the kernel's reason ("native XDP not supported").
	_ = unix.SetsockoptInt(fd, unix.SOL_NETLINK, unix.NETLINK_EXT_ACK, 1)
	_ = unix.SetsockoptInt(fd, unix.SOL_NETLINK, unix.NETLINK_CAP_ACK, 1)
	if err := unix.Bind(fd, &unix.SockaddrNetlink{Family: unix.AF_NETLINK}); err != nil {
		unix.Close(fd)
		return nil, fmt.Errorf("netlink bind: %w", err)
	}
	return &Conn{fd: fd}, nil
}

// Close closes the socket.
func (c *Conn) Close() error {
	if c == nil || c.fd < 0 {
		return nil
	}
	err := unix.Close(c.fd)
	c.fd = -1
	return err
}

func align4(n int) int { return (n + 3) &^ 3 }

func appendAttr(b []byte, typ uint16, val []byte) []byte {
	l := unix.SizeofRtAttr + len(val)
	b = binary.NativeEndian.AppendUint16(b, uint16(l))
	b = binary.NativeEndian.AppendUint16(b, typ)
	b = append(b, val...)
	for len(b)%4 != 0 {
		b = append(b, 0)
	}
	return b
}

// request sends one message (header filled here) and returns the replies
// up to the ack or the single answer.
func (c *Conn) request(typ uint16, flags uint16, body []byte) ([]syscall.NetlinkMessage, error) {
	seq := c.seq.Add(1)
	msg := make([]byte, unix.SizeofNlMsghdr, unix.SizeofNlMsghdr+len(body))
	msg = append(msg, body...)
	binary.NativeEndian.PutUint32(msg[0:], uint32(len(msg)))
	binary.NativeEndian.PutUint16(msg[4:], typ)
	binary.NativeEndian.PutUint16(msg[6:], flags|unix.NLM_F_REQUEST)
	binary.NativeEndian.PutUint32(msg[8:], seq)
	if err := unix.Sendto(c.fd, msg, 0, &unix.SockaddrNetlink{Family: unix.AF_NETLINK}); err != nil {
		return nil, fmt.Errorf("netlink send: %w", err)
	}
	buf := make([]byte, 1<<16)
	var out []syscall.NetlinkMessage
	for {
		n, _, err := unix.Recvfrom(c.fd, buf, 0)
		if err != nil {
			if err == unix.EINTR {
				continue
			}
			return nil, fmt.Errorf("netlink receive: %w", err)
		}
		msgs, err := syscall.ParseNetlinkMessage(buf[:n])
		if err != nil {
			return nil, fmt.Errorf("netlink parse: %w", err)
		}
		for _, m := range msgs {
			if m.Header.Seq != seq {
				continue
			}
			switch m.Header.Type {
			case unix.NLMSG_ERROR:
				return out, ackError(m)
			case unix.NLMSG_DONE:
				return out, nil
			default:
				out = append(out, m)
				if m.Header.Flags&unix.NLM_F_MULTI == 0 && flags&unix.NLM_F_ACK == 0 {
					return out, nil
				}
			}
		}
	}
}

// ackError decodes an NLMSG_ERROR: nil for an ack, else the errno with the
// kernel's extended message when there is one.
func ackError(m syscall.NetlinkMessage) error {
	if len(m.Data) < 4 {
		return errors.New("netlink: short error message")
	}
	code := int32(binary.NativeEndian.Uint32(m.Data))
	if code == 0 {
		return nil
	}
	errno := unix.Errno(-code)
	// After the errno: the request's header (capped: header only), then
	// the extended-ack attributes.
	off := 4 + unix.SizeofNlMsghdr
	if m.Header.Flags&unix.NLM_F_CAPPED == 0 && len(m.Data) >= off {
		off = 4 + int(binary.NativeEndian.Uint32(m.Data[4:]))
	}
	for off+4 <= len(m.Data) {
		l := int(binary.NativeEndian.Uint16(m.Data[off:]))
		t := binary.NativeEndian.Uint16(m.Data[off+2:])
		if l < 4 || off+l > len(m.Data) {
			break
		}
		if t == unix.NLMSGERR_ATTR_MSG {
			s := m.Data[off+4 : off+l]
			for len(s) > 0 && s[len(s)-1] == 0 {
				s = s[:len(s)-1]
			}
			return &KernelError{Errno: errno, Msg: string(s)}
		}
		off += align4(l)
	}
	return &KernelError{Errno: errno}
}

// KernelError is an errno with the kernel's extended-ack message.
type KernelError struct {
	Errno unix.Errno
	Msg   string
}

func (e *KernelError) Error() string {
	if e.Msg != "" {
		return e.Errno.Error() + " (" + e.Msg + ")"
	}
	return e.Errno.Error()
}

func (e *KernelError) Unwrap() error { return e.Errno }

func ifinfo(index int) []byte {
	b := make([]byte, unix.SizeofIfInfomsg)
	b[0] = unix.AF_UNSPEC
	binary.NativeEndian.PutUint32(b[4:], uint32(int32(index)))
	return b
}

// LinkByName looks an interface up in the socket's namespace.
func (c *Conn) LinkByName(name string) (Link, error) {
	if name == "" || len(name) >= unix.IFNAMSIZ {
		return Link{}, fmt.Errorf("%q: %w", name, ErrNoLink)
	}
	body := appendAttr(ifinfo(0), unix.IFLA_IFNAME, append([]byte(name), 0))
	msgs, err := c.request(unix.RTM_GETLINK, 0, body)
	if err != nil {
		if errors.Is(err, unix.ENODEV) {
			return Link{}, fmt.Errorf("%q: %w", name, ErrNoLink)
		}
		return Link{}, fmt.Errorf("%q: %w", name, err)
	}
	for _, m := range msgs {
		if m.Header.Type == unix.RTM_NEWLINK {
			return parseLink(m)
		}
	}
	return Link{}, fmt.Errorf("%q: %w", name, ErrNoLink)
}

// LinkByIndex looks an interface up by index.
func (c *Conn) LinkByIndex(index int) (Link, error) {
	msgs, err := c.request(unix.RTM_GETLINK, 0, ifinfo(index))
	if err != nil {
		return Link{}, fmt.Errorf("ifindex %d: %w", index, err)
	}
	for _, m := range msgs {
		if m.Header.Type == unix.RTM_NEWLINK {
			return parseLink(m)
		}
	}
	return Link{}, fmt.Errorf("ifindex %d: %w", index, ErrNoLink)
}

func parseLink(m syscall.NetlinkMessage) (Link, error) {
	if len(m.Data) < unix.SizeofIfInfomsg {
		return Link{}, errors.New("netlink: short RTM_NEWLINK")
	}
	var l Link
	l.Index = int(int32(binary.NativeEndian.Uint32(m.Data[4:])))
	l.Up = binary.NativeEndian.Uint32(m.Data[8:])&unix.IFF_UP != 0
	l.Running = binary.NativeEndian.Uint32(m.Data[8:])&unix.IFF_RUNNING != 0
	attrs, err := syscall.ParseNetlinkRouteAttr(&m)
	if err != nil {
		return Link{}, fmt.Errorf("netlink: %w", err)
	}
	u32 := func(v []byte) uint32 {
		if len(v) < 4 {
			return 0
		}
		return binary.NativeEndian.Uint32(v)
	}
	for _, a := range attrs {
		switch a.Attr.Type {
		case unix.IFLA_IFNAME:
			s := a.Value
			for len(s) > 0 && s[len(s)-1] == 0 {
				s = s[:len(s)-1]
			}
			l.Name = string(s)
		case unix.IFLA_ADDRESS:
			l.MAC = append(net.HardwareAddr(nil), a.Value...)
		case unix.IFLA_MTU:
			l.MTU = int(u32(a.Value))
		case unix.IFLA_NUM_RX_QUEUES:
			l.RxQueues = int(u32(a.Value))
		case unix.IFLA_NUM_TX_QUEUES:
			l.TxQueues = int(u32(a.Value))
		case unix.IFLA_LINKINFO, unix.IFLA_LINKINFO | unix.NLA_F_NESTED:
			l.Kind = linkKind(a.Value)
		case unix.IFLA_XDP, unix.IFLA_XDP | unix.NLA_F_NESTED:
			v := a.Value
			for len(v) >= 4 {
				n := int(binary.NativeEndian.Uint16(v))
				t := binary.NativeEndian.Uint16(v[2:]) &^ unix.NLA_F_NESTED
				if n < 4 || n > len(v) {
					break
				}
				val := v[4:n]
				switch t {
				case unix.IFLA_XDP_ATTACHED:
					if len(val) > 0 {
						l.XDPAttached = val[0]
					}
				case unix.IFLA_XDP_PROG_ID:
					l.XDPProgID = u32(val)
				case unix.IFLA_XDP_DRV_PROG_ID:
					l.XDPDrvProgID = u32(val)
				case unix.IFLA_XDP_SKB_PROG_ID:
					l.XDPSkbProgID = u32(val)
				}
				if align4(n) >= len(v) {
					break
				}
				v = v[align4(n):]
			}
		}
	}
	if l.RxQueues < 1 {
		l.RxQueues = 1
	}
	if l.TxQueues < 1 {
		l.TxQueues = 1
	}
	return l, nil
}

// SetXDP attaches the program fd to the interface with the given
// XDP_FLAGS_* (fd -1 detaches the program of the mode in flags).
func (c *Conn) SetXDP(index, fd int, flags uint32) error {
	var nested []byte
	nested = appendAttr(nested, unix.IFLA_XDP_FD, binary.NativeEndian.AppendUint32(nil, uint32(int32(fd))))
	if flags != 0 {
		nested = appendAttr(nested, unix.IFLA_XDP_FLAGS, binary.NativeEndian.AppendUint32(nil, flags))
	}
	body := appendAttr(ifinfo(index), unix.IFLA_XDP|unix.NLA_F_NESTED, nested)
	_, err := c.request(unix.RTM_SETLINK, unix.NLM_F_ACK, body)
	return err
}

// XDP attachment modes as IFLA_XDP_ATTACHED reports them.
const (
	AttachedNone  = 0
	AttachedDrv   = 1
	AttachedSkb   = 2
	AttachedHw    = 3
	AttachedMulti = 4
)

func bpf(cmd int, attr unsafe.Pointer, size uintptr) (int, error) {
	r, _, e := unix.Syscall(unix.SYS_BPF, uintptr(cmd), uintptr(attr), size)
	if e != 0 {
		return -1, e
	}
	return int(r), nil
}

// LinkCreateXDP attaches a program to an interface through a BPF link
// (Linux ≥ 5.9): the kernel detaches it when the returned fd is closed,
// including when the process dies, so a crash leaves no program behind.
func LinkCreateXDP(progFD, ifindex int, flags uint32) (int, error) {
	var attr [64]byte
	binary.NativeEndian.PutUint32(attr[0:], uint32(progFD))
	binary.NativeEndian.PutUint32(attr[4:], uint32(ifindex))
	binary.NativeEndian.PutUint32(attr[8:], unix.BPF_XDP)
	binary.NativeEndian.PutUint32(attr[12:], flags)
	fd, err := bpf(unix.BPF_LINK_CREATE, unsafe.Pointer(&attr[0]), unsafe.Sizeof(attr))
	if err == nil {
		unix.CloseOnExec(fd)
	}
	return fd, err
}

// ProgName returns the name of a loaded BPF program, or "" if it cannot be
// read.
func ProgName(id uint32) string {
	var attr [64]byte
	binary.NativeEndian.PutUint32(attr[0:], id)
	fd, err := bpf(unix.BPF_PROG_GET_FD_BY_ID, unsafe.Pointer(&attr[0]), unsafe.Sizeof(attr))
	if err != nil {
		return ""
	}
	defer unix.Close(fd)
	var info [256]byte
	attr = [64]byte{}
	binary.NativeEndian.PutUint32(attr[0:], uint32(fd))
	binary.NativeEndian.PutUint32(attr[4:], uint32(len(info)))
	binary.NativeEndian.PutUint64(attr[8:], uint64(uintptr(unsafe.Pointer(&info[0]))))
	if _, err := bpf(unix.BPF_OBJ_GET_INFO_BY_FD, unsafe.Pointer(&attr[0]), unsafe.Sizeof(attr)); err != nil {
		return ""
	}
	name := info[64:80] // bpf_prog_info.name
	for i, c := range name {
		if c == 0 {
			return string(name[:i])
		}
	}
	return string(name)
}

// Channels returns the interface's active RX queue count from ethtool
// (rx + combined channels), or ok=false when the driver does not report
// channels.
func Channels(ifname string) (rx int, ok bool) {
	fd, err := unix.Socket(unix.AF_INET, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return 0, false
	}
	defer unix.Close(fd)
	// struct ethtool_channels: cmd, max_rx, max_tx, max_other,
	// max_combined, rx_count, tx_count, other_count, combined_count.
	var ch [9]uint32
	ch[0] = unix.ETHTOOL_GCHANNELS
	var ifr [40]byte // struct ifreq: name[16] + a union with a pointer
	copy(ifr[:unix.IFNAMSIZ-1], ifname)
	*(*uintptr)(unsafe.Pointer(&ifr[unix.IFNAMSIZ])) = uintptr(unsafe.Pointer(&ch[0]))
	if _, _, e := unix.Syscall(unix.SYS_IOCTL, uintptr(fd), unix.SIOCETHTOOL, uintptr(unsafe.Pointer(&ifr[0]))); e != 0 {
		return 0, false
	}
	n := int(ch[5] + ch[8])
	return n, n > 0
}

// LinkStats is the part of the kernel's struct rtnl_link_stats64 (what
// `ip -s link` prints) that counts lost frames.
type LinkStats struct {
	RxDropped      uint64 // rx_dropped: received, dropped by the driver or the stack
	TxDropped      uint64 // tx_dropped: handed to the driver, not sent
	RxOverErrors   uint64 // rx_over_errors: receive ring overruns
	RxFIFOErrors   uint64 // rx_fifo_errors
	RxMissedErrors uint64 // rx_missed_errors: missed by the hardware (no buffer)
	TxFIFOErrors   uint64 // tx_fifo_errors
}

// stats64 offsets (in 8-byte words) in struct rtnl_link_stats64.
const (
	st64RxDropped      = 6
	st64TxDropped      = 7
	st64RxOverErrors   = 11
	st64RxFIFOErrors   = 14
	st64RxMissedErrors = 15
	st64TxFIFOErrors   = 18
)

func parseStats64(v []byte) (LinkStats, bool) {
	word := func(i int) uint64 {
		if 8*i+8 > len(v) {
			return 0
		}
		return binary.NativeEndian.Uint64(v[8*i:])
	}
	if len(v) < 8*(st64TxDropped+1) {
		return LinkStats{}, false
	}
	return LinkStats{
		RxDropped:      word(st64RxDropped),
		TxDropped:      word(st64TxDropped),
		RxOverErrors:   word(st64RxOverErrors),
		RxFIFOErrors:   word(st64RxFIFOErrors),
		RxMissedErrors: word(st64RxMissedErrors),
		TxFIFOErrors:   word(st64TxFIFOErrors),
	}, true
}

// LinkCounters is an interface's drop counters and, for a veth, where its
// peer is.
type LinkCounters struct {
	Stats LinkStats
	// Veth: the link is a veth, whose peer has index PeerIndex in the
	// namespace whose id (in the socket's namespace) is PeerNetnsID, or in
	// the socket's own namespace when PeerNetnsID is -1.
	Veth        bool
	PeerIndex   int
	PeerNetnsID int
}

// Counters reads interface index's counters (one RTM_GETLINK). With
// netnsID ≥ 0 the interface is looked up in that namespace
// (IFLA_TARGET_NETNSID: a veth peer's), else in the socket's own.
func (c *Conn) Counters(netnsID, index int) (LinkCounters, error) {
	body := ifinfo(index)
	if netnsID >= 0 {
		body = appendAttr(body, unix.IFLA_TARGET_NETNSID, binary.NativeEndian.AppendUint32(nil, uint32(int32(netnsID))))
	}
	msgs, err := c.request(unix.RTM_GETLINK, 0, body)
	if err != nil {
		return LinkCounters{}, fmt.Errorf("ifindex %d: %w", index, err)
	}
	for _, m := range msgs {
		if m.Header.Type == unix.RTM_NEWLINK {
			return parseCounters(m)
		}
	}
	return LinkCounters{}, fmt.Errorf("ifindex %d: %w", index, ErrNoLink)
}

func parseCounters(m syscall.NetlinkMessage) (LinkCounters, error) {
	lc := LinkCounters{PeerNetnsID: -1}
	attrs, err := syscall.ParseNetlinkRouteAttr(&m)
	if err != nil {
		return lc, fmt.Errorf("netlink: %w", err)
	}
	haveStats := false
	for _, a := range attrs {
		switch a.Attr.Type &^ unix.NLA_F_NESTED {
		case unix.IFLA_STATS64:
			lc.Stats, haveStats = parseStats64(a.Value)
		case unix.IFLA_LINK:
			if len(a.Value) >= 4 {
				lc.PeerIndex = int(int32(binary.NativeEndian.Uint32(a.Value)))
			}
		case unix.IFLA_LINK_NETNSID:
			if len(a.Value) >= 4 {
				lc.PeerNetnsID = int(int32(binary.NativeEndian.Uint32(a.Value)))
			}
		case unix.IFLA_LINKINFO:
			lc.Veth = linkKind(a.Value) == "veth"
		}
	}
	if !haveStats {
		return lc, errors.New("netlink: no IFLA_STATS64 in the answer")
	}
	if !lc.Veth {
		lc.PeerIndex, lc.PeerNetnsID = 0, -1
	}
	return lc, nil
}

// linkKind is IFLA_INFO_KIND of an IFLA_LINKINFO attribute's value.
func linkKind(v []byte) string {
	for len(v) >= 4 {
		n := int(binary.NativeEndian.Uint16(v))
		t := binary.NativeEndian.Uint16(v[2:]) &^ unix.NLA_F_NESTED
		if n < 4 || n > len(v) {
			return ""
		}
		if t == unix.IFLA_INFO_KIND {
			s := v[4:n]
			for len(s) > 0 && s[len(s)-1] == 0 {
				s = s[:len(s)-1]
			}
			return string(s)
		}
		if align4(n) >= len(v) {
			return ""
		}
		v = v[align4(n):]
	}
	return ""
}
