package rss

import (
	"encoding/binary"
	"errors"
	"fmt"
	"runtime"
	"syscall"
	"unsafe"

	"golang.org/x/sys/unix"
)

// Toeplitz is the Microsoft RSS hash of input under key: for every bit of
// input that is set, the 32 bits of key starting at that bit's position
// are XORed into the result. The key needs len(input)+4 bytes.
func Toeplitz(key, input []byte) uint32 {
	var h uint32
	// v holds key bits [i, i+32) in its top half for input bit i.
	v := uint64(binary.BigEndian.Uint32(key)) << 32
	for i, b := range input {
		if i+4 < len(key) {
			v |= uint64(key[i+4]) << 24
		}
		for bit := 7; bit >= 0; bit-- {
			if b&(1<<bit) != 0 {
				h ^= uint32(v >> 32)
			}
			v <<= 1
		}
	}
	return h
}

// HashV4 is the RSS hash of an IPv4 TCP or UDP packet (addresses as
// big-endian uint32): the input is source address, destination address,
// source port, destination port, as the NIC reads them.
func HashV4(key []byte, src, dst uint32, sport, dport uint16) uint32 {
	var in [12]byte
	binary.BigEndian.PutUint32(in[0:], src)
	binary.BigEndian.PutUint32(in[4:], dst)
	binary.BigEndian.PutUint16(in[8:], sport)
	binary.BigEndian.PutUint16(in[10:], dport)
	return Toeplitz(key, in[:])
}

// SymmetricKey returns a key of n bytes (n even) with 0x6d5a repeated:
// since the key repeats every 16 bits, swapping the source and
// destination addresses (32 bits apart) and ports (16 bits apart) does
// not change the hash (Woo and Park, "Scalable TCP Session Monitoring
// with Symmetric Receive-side Scaling").
func SymmetricKey(n int) []byte {
	k := make([]byte, n)
	for i := range k {
		k[i] = [2]byte{0x6d, 0x5a}[i%2]
	}
	return k
}

// Config is a device's RSS configuration as the kernel reports it.
type Config struct {
	Key   []byte   // the hash key
	Table []uint32 // indirection table: entry hash % len(Table) is the RX queue
	HFunc uint8    // the hash function's bit (ETH_RSS_HASH_TOP = 1: Toeplitz; 0: unknown)
}

// Toeplitz reports whether the device hashes with Toeplitz (so that Queue
// predicts it).
func (c *Config) Toeplitz() bool { return c.HFunc == hashTop && len(c.Key) >= 16 && len(c.Table) > 0 }

// Queue is the RX queue an IPv4 TCP/UDP packet with this tuple lands on.
func (c *Config) Queue(src, dst uint32, sport, dport uint16) int {
	return int(c.Table[HashV4(c.Key, src, dst, sport, dport)%uint32(len(c.Table))])
}

// Symmetric reports whether the key hashes both directions of every flow
// alike (the 0x6d5a pattern, or any key repeating every 16 bits).
func (c *Config) Symmetric() bool {
	if len(c.Key) < 4 {
		return false
	}
	for i := 2; i < len(c.Key); i++ {
		if c.Key[i] != c.Key[i-2] {
			return false
		}
	}
	return true
}

// ErrNotSupported is returned when the device has no RSS configuration to
// read or set (veth, most virtual devices).
var ErrNotSupported = errors.New("the device does not support RSS configuration")

const (
	ethtoolGRSSH  = 0x46       // ETHTOOL_GRSSH
	ethtoolSRSSH  = 0x47       // ETHTOOL_SRSSH
	hashTop       = 1          // ETH_RSS_HASH_TOP (Toeplitz)
	indirNoChange = 0xffffffff // ETH_RXFH_INDIR_NO_CHANGE
	rxfhHeader    = 24         // struct ethtool_rxfh without rss_config
)

// ifreq is struct ifreq with ifr_data.
type ifreq struct {
	name [unix.IFNAMSIZ]byte
	data unsafe.Pointer
	_    [16]byte
}

// ethtool issues SIOCETHTOOL on ifname with buf as the command's data.
func ethtool(ifname string, buf []byte) error {
	if len(ifname) >= unix.IFNAMSIZ {
		return fmt.Errorf("interface name %q too long", ifname)
	}
	fd, err := unix.Socket(unix.AF_INET, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return err
	}
	defer unix.Close(fd)
	var ifr ifreq
	copy(ifr.name[:], ifname)
	ifr.data = unsafe.Pointer(&buf[0])
	_, _, errno := unix.Syscall(unix.SYS_IOCTL, uintptr(fd), unix.SIOCETHTOOL, uintptr(unsafe.Pointer(&ifr)))
	runtime.KeepAlive(buf)
	if errno != 0 {
		if errno == syscall.EOPNOTSUPP || errno == syscall.EINVAL {
			return fmt.Errorf("%w (ethtool ioctl: %v)", ErrNotSupported, errno)
		}
		return fmt.Errorf("ethtool ioctl: %w", errno)
	}
	return nil
}

// Read returns the RSS configuration of ifname (context 0).
func Read(ifname string) (*Config, error) {
	hdr := make([]byte, rxfhHeader)
	binary.NativeEndian.PutUint32(hdr, ethtoolGRSSH)
	if err := ethtool(ifname, hdr); err != nil {
		return nil, fmt.Errorf("%s: reading the RSS key and table: %w", ifname, err)
	}
	indir := binary.NativeEndian.Uint32(hdr[8:])
	keyLen := binary.NativeEndian.Uint32(hdr[12:])
	if indir > 1<<16 || keyLen > 1024 {
		return nil, fmt.Errorf("%s: implausible RSS sizes (table %d, key %d)", ifname, indir, keyLen)
	}
	buf := make([]byte, rxfhHeader+4*int(indir)+int(keyLen)+8)
	binary.NativeEndian.PutUint32(buf, ethtoolGRSSH)
	binary.NativeEndian.PutUint32(buf[8:], indir)
	binary.NativeEndian.PutUint32(buf[12:], keyLen)
	if err := ethtool(ifname, buf); err != nil {
		return nil, fmt.Errorf("%s: reading the RSS key and table: %w", ifname, err)
	}
	c := &Config{HFunc: buf[16], Table: make([]uint32, indir), Key: make([]byte, keyLen)}
	for i := range c.Table {
		c.Table[i] = binary.NativeEndian.Uint32(buf[rxfhHeader+4*i:])
	}
	copy(c.Key, buf[rxfhHeader+4*int(indir):])
	return c, nil
}

// SetSymmetric gives ifname a symmetric key of its key's size, with the
// Toeplitz hash, keeping its indirection table, and returns the new
// configuration. A device without RSS configuration gives ErrNotSupported.
func SetSymmetric(ifname string) (*Config, error) {
	cur, err := Read(ifname)
	if err != nil {
		return nil, err
	}
	if len(cur.Key) == 0 {
		return nil, fmt.Errorf("%s: %w (no hash key)", ifname, ErrNotSupported)
	}
	key := SymmetricKey(len(cur.Key))
	buf := make([]byte, rxfhHeader+len(key))
	binary.NativeEndian.PutUint32(buf, ethtoolSRSSH)
	binary.NativeEndian.PutUint32(buf[8:], indirNoChange)
	binary.NativeEndian.PutUint32(buf[12:], uint32(len(key)))
	buf[16] = hashTop
	copy(buf[rxfhHeader:], key)
	if err := ethtool(ifname, buf); err != nil {
		return nil, fmt.Errorf("%s: setting a symmetric RSS key: %w", ifname, err)
	}
	return Read(ifname)
}

// Setup is what a driver does when it opens ifname: with symmetric, it
// sets a symmetric key; then it reads the configuration. A device without
// RSS configuration (or that refuses the key) is reported through logf,
// once, and Setup returns what it could read (nil when nothing).
func Setup(ifname string, symmetric bool, logf func(string, ...any)) *Config {
	if symmetric {
		c, err := SetSymmetric(ifname)
		if err == nil {
			return c
		}
		logf("rss = \"symmetric\": %v; the queues are not symmetric (FromDevice's handoff keeps each flow on one worker)", err)
	}
	c, err := Read(ifname)
	if err != nil || !c.Toeplitz() {
		return nil
	}
	return c
}
