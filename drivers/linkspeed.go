package drivers

import (
	"unsafe"

	"golang.org/x/sys/unix"
)

// Linked is implemented by the configs of drivers that run on a kernel
// network interface (afxdp, afpacket): the interface whose link speed
// bounds what the device can receive.
type Linked interface {
	LinkInterface() string
}

// ethtoolCmd is struct ethtool_cmd (linux/ethtool.h), ETHTOOL_GSET's
// answer: the link speed in Mbit/s is speed | speed_hi<<16.
type ethtoolCmd struct {
	cmd, supported, advertising uint32
	speed                       uint16
	duplex, port, phyAddress    uint8
	transceiver, autoneg, mdio  uint8
	maxTxPkt, maxRxPkt          uint32
	speedHi                     uint16
	mdix, mdixCtrl              uint8
	lpAdvertising               uint32
	reserved                    [2]uint32
}

const ethtoolGSet = 0x00000001 // ETHTOOL_GSET

// LinkSpeed is the link speed of interface ifname in bit/s, as the
// kernel reports it (ethtool's Speed: the ETHTOOL_GSET ioctl, in the
// calling thread's network namespace), ok false when it reports none: an
// interface without a link speed (lo, a tun), a NIC whose link is down,
// a virtual NIC that does not say (virtio reports "unknown"). A veth
// reports 10 Gbit/s, the speed it was given, not what it can carry.
func LinkSpeed(ifname string) (bitsPerSecond uint64, ok bool) {
	fd, err := unix.Socket(unix.AF_INET, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return 0, false
	}
	defer unix.Close(fd)
	if len(ifname) == 0 || len(ifname) >= unix.IFNAMSIZ {
		return 0, false
	}
	cmd := ethtoolCmd{cmd: ethtoolGSet}
	// struct ifreq: the name, then (a union) the pointer to the command.
	var ifr struct {
		name [unix.IFNAMSIZ]byte
		data unsafe.Pointer
		_    [16]byte
	}
	copy(ifr.name[:], ifname)
	ifr.data = unsafe.Pointer(&cmd)
	if _, _, e := unix.Syscall(unix.SYS_IOCTL, uintptr(fd), unix.SIOCETHTOOL, uintptr(unsafe.Pointer(&ifr))); e != 0 {
		return 0, false
	}
	mbit := uint32(cmd.speed) | uint32(cmd.speedHi)<<16
	if mbit == 0 || mbit == 0xffffffff || mbit == 0xffff { // SPEED_UNKNOWN (-1), and its 16-bit form
		return 0, false
	}
	return uint64(mbit) * 1_000_000, true
}
