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

	fail := func(f string, a ...any) { fmt.Fprintf(os.Stderr, "flood: "+f+"\n", a...); os.Exit(1) }
	ifi, err := net.InterfaceByName(*ifname)
	if err != nil {
		fail("%v", err)
	}
	dmac, err := net.ParseMAC(*dstMAC)
	if err != nil {
		fail("-dst-mac: %v", err)
	}
	pfx, err := netip.ParsePrefix(*srcCIDR)
	if err != nil || !pfx.Addr().Is4() {
		fail("-src: %v", err)
	}
	var dstAddrs [][4]byte
	for _, s := range splitComma(*dsts) {
		a, err := netip.ParseAddr(s)
		if err != nil || !a.Is4() {
			fail("-dst %q: not an IPv4 address", s)
		}
		dstAddrs = append(dstAddrs, a.As4())
	}
	if len(dstAddrs) == 0 {
		fail("-dst: none")
	}
	if *proto != "syn" && *proto != "udp" {
		fail("-proto: syn or udp")
	}

	fd, err := unix.Socket(unix.AF_PACKET, unix.SOCK_RAW, 0) // protocol 0: receives nothing
	if err != nil {
		fail("socket: %v", err)
	}
	if err := unix.Bind(fd, &unix.SockaddrLinklayer{Ifindex: ifi.Index}); err != nil {
		fail("bind: %v", err)
	}
	_ = unix.SetsockoptInt(fd, unix.SOL_PACKET, unix.PACKET_QDISC_BYPASS, 1)

	base := binary.BigEndian.Uint32(pfx.Masked().Addr().AsSlice())
	hostMask := uint32(0)
	if pfx.Bits() < 32 {
		hostMask = 1<<(32-pfx.Bits()) - 1
	}

	const batch = 64
	const size = 60
	frames := make([][size]byte, batch)
	iov := make([]unix.Iovec, batch)
	msgs := make([]mmsghdr, batch)
	for i := range frames {
		f := frames[i][:]
		copy(f[0:6], dmac)
		copy(f[6:12], ifi.HardwareAddr)
		binary.BigEndian.PutUint16(f[12:], 0x0800)
		ip := f[14:34]
		ip[0] = 0x45
		binary.BigEndian.PutUint16(ip[2:], size-14) // 46: padding counted as payload (UDP) or trailing (TCP)
		ip[8] = 64
		if *proto == "syn" {
			binary.BigEndian.PutUint16(ip[2:], 40)
			ip[9] = 6
		} else {
			ip[9] = 17
		}
		iov[i].Base = &frames[i][0]
		iov[i].SetLen(size)
		msgs[i].hdr.Iov = &iov[i]
		msgs[i].hdr.SetIovlen(1)
	}

	rng := uint64(time.Now().UnixNano()) | 1
	next := func() uint64 { // xorshift64*
		rng ^= rng >> 12
		rng ^= rng << 25
		rng ^= rng >> 27
		return rng * 2685821657736338717
	}
	fill := func(f []byte) {
		r := next()
		src := base | uint32(r)&hostMask
		if src&hostMask == 0 || src&hostMask == hostMask { // not the network or broadcast address
			src ^= 1
		}
		d := dstAddrs[0]
		if len(dstAddrs) > 1 {
			d = dstAddrs[(r>>40)%uint64(len(dstAddrs))]
		}
		ip := f[14:34]
		binary.BigEndian.PutUint16(ip[4:], uint16(r>>32)) // ID
		binary.BigEndian.PutUint32(ip[12:], src)
		copy(ip[16:20], d[:])
		ip[10], ip[11] = 0, 0
		binary.BigEndian.PutUint16(ip[10:], csum(ip, 0))
		sport := uint16(1024 + (r>>16)%64000)
		dp := uint16(*dport)
		if dp == 0 {
			dp = uint16(1 + (r>>48)%65535)
		}
		l4 := f[34:]
		var l4len int
		if *proto == "syn" {
			l4len = 20
			t := l4[:20]
			binary.BigEndian.PutUint16(t[0:], sport)
			binary.BigEndian.PutUint16(t[2:], dp)
			binary.BigEndian.PutUint32(t[4:], uint32(next()))
			binary.BigEndian.PutUint32(t[8:], 0)
			t[12] = 5 << 4
			t[13] = 0x02 // SYN
			binary.BigEndian.PutUint16(t[14:], 64240)
			t[16], t[17] = 0, 0
		} else {
			l4len = size - 34
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
		if *proto == "syn" {
			binary.BigEndian.PutUint16(l4[16:], c)
		} else {
			if c == 0 {
				c = 0xffff
			}
			binary.BigEndian.PutUint16(l4[6:], c)
		}
	}

	var sent, refused uint64
	start := time.Now()
	end := start.Add(*dur)
	n := batch
	if *pps > 0 && *pps < 64000 {
		n = int(*pps/1000) + 1
	}
	for {
		now := time.Now()
		if !now.Before(end) {
			break
		}
		if *pps > 0 {
			due := start.Add(time.Duration(float64(sent+refused) / *pps * 1e9))
			if due.After(now) {
				time.Sleep(due.Sub(now))
				continue
			}
		}
		for i := 0; i < n; i++ {
			fill(frames[i][:])
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
	el := time.Since(start).Seconds()
	var ru unix.Rusage
	_ = unix.Getrusage(unix.RUSAGE_SELF, &ru)
	u := float64(ru.Utime.Sec) + float64(ru.Utime.Usec)/1e6
	s := float64(ru.Stime.Sec) + float64(ru.Stime.Usec)/1e6
	fmt.Printf("flood: sent %d refused %d in %.2f s: %.0f pps; cpu %.2f+%.2f s (%.0f%% of one core)\n",
		sent, refused, el, float64(sent)/el, u, s, 100*(u+s)/el)
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
