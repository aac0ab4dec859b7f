package kernelmirror

import (
	"encoding/binary"
	"fmt"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/vishvananda/netlink"
	"github.com/vishvananda/netns"
	"golang.org/x/sys/unix"
)

// TestEventsMatchLibrary: the mirror's own reader decodes every kind of
// route event the mirror reads as the netlink library does. Both are
// subscribed in one namespace while routes of each family, type, table,
// metric and TOS, with one path and several (weighted, through two
// interfaces), are added, replaced and deleted; every event's fields that
// the mirror reads must be the same from both, in the same order.
func TestEventsMatchLibrary(t *testing.T) {
	name, ip := mirrorNS(t)
	ip("link", "add", "m2", "type", "veth", "peer", "name", "m3")
	ip("link", "set", "m3", "up")
	ip("link", "set", "m2", "up")
	ip("addr", "add", "10.254.0.1/16", "dev", "m2")
	ip("-6", "addr", "add", "2001:db8:fffe::1/64", "dev", "m2", "nodad")
	ns, err := netns.GetFromName(name)
	if err != nil {
		t.Fatal(err)
	}
	defer ns.Close()

	done := make(chan struct{})
	defer close(done)
	var ownErr error
	own, err := subscribeEvents(ns, 1<<20, true, done, func(err error) { ownErr = err })
	if err != nil {
		t.Fatal(err)
	}
	lib := make(chan netlink.RouteUpdate, 1024)
	if err := netlink.RouteSubscribeWithOptions(lib, done, netlink.RouteSubscribeOptions{Namespace: &ns}); err != nil {
		t.Fatal(err)
	}

	ops := [][]string{
		{"route", "add", "192.0.2.0/24", "via", "10.255.0.2"},
		{"route", "add", "198.51.100.0/24", "dev", "m0"},
		{"route", "add", "198.51.100.0/24", "dev", "m2", "metric", "50"},
		{"route", "add", "203.0.113.0/25", "via", "10.255.0.2", "tos", "0x10"},
		{"route", "add", "default", "via", "10.254.0.2"},
		{"route", "add", "100.64.0.0/10", "nexthop", "via", "10.255.0.2", "weight", "3", "nexthop", "via", "10.254.0.2"},
		{"route", "replace", "192.0.2.0/24", "via", "10.254.0.3"},
		{"route", "add", "blackhole", "10.100.5.1/32"},
		{"route", "add", "unreachable", "10.100.6.0/24"},
		{"route", "add", "prohibit", "10.100.7.0/24", "metric", "7"},
		{"route", "add", "throw", "10.100.8.0/24"},
		{"route", "add", "10.100.9.0/24", "via", "10.255.0.2", "table", "100"},
		{"-6", "route", "add", "2001:db8:1::/48", "via", "2001:db8:ffff::2"},
		{"-6", "route", "add", "2001:db8:2::/48", "nexthop", "via", "2001:db8:ffff::2", "weight", "2", "nexthop", "via", "2001:db8:fffe::2"},
		{"-6", "route", "add", "blackhole", "2001:db8:3::/48"},
		{"-6", "route", "add", "default", "via", "2001:db8:ffff::3", "metric", "900"},
		{"route", "del", "100.64.0.0/10"},
		{"route", "del", "192.0.2.0/24"},
		{"-6", "route", "del", "2001:db8:2::/48"},
		{"route", "del", "10.100.9.0/24", "table", "100"},
	}
	for _, op := range ops {
		ip(op...)
	}
	// The deletion of the interface with its routes comes last, so that
	// every event above has been sent when its events are in.
	ip("link", "del", "m2")

	var libEv []string
	var s routeScratch
	var ownEv []string
	deadline := time.After(5 * time.Second)
	for quiet := time.NewTimer(time.Second); ; {
		select {
		case u := <-lib:
			libEv = append(libEv, describe(&u.Route, u.Type == unix.RTM_NEWROUTE))
			quiet.Reset(time.Second)
			continue
		case b, ok := <-own.ch:
			if !ok {
				t.Fatalf("the reader stopped: %v", ownErr)
			}
			for i := range b.ev {
				ownEv = append(ownEv, describe(s.route(&b.ev[i], b.paths), b.ev[i].add))
			}
			b.ev, b.paths = b.ev[:0], b.paths[:0]
			own.free <- b
			quiet.Reset(time.Second)
			continue
		case <-quiet.C:
		case <-deadline:
		}
		break
	}
	if len(libEv) < len(ops) {
		t.Fatalf("the library read %d events for %d changes", len(libEv), len(ops))
	}
	if !slices.Equal(ownEv, libEv) {
		t.Errorf("the events differ:\nown (%d):\n  %s\nlibrary (%d):\n  %s", len(ownEv), strings.Join(ownEv, "\n  "),
			len(libEv), strings.Join(libEv, "\n  "))
	}
	for _, want := range []string{"add fam 2 table 254 type 1 tos 0 prio 0 dst 100.64.0.0/10 oif 0 gw <nil> paths [",
		"add fam 10 table 254 type 6 tos 0 prio 1024 dst 2001:db8:3::/48"} {
		if !slices.ContainsFunc(ownEv, func(e string) bool { return strings.HasPrefix(e, want) }) {
			t.Errorf("no event %q... among:\n  %s", want, strings.Join(ownEv, "\n  "))
		}
	}
}

// describe is what the mirror reads of one event.
func describe(r *netlink.Route, add bool) string {
	op := "del"
	if add {
		op = "add"
	}
	dst := "<nil>"
	if r.Dst != nil {
		dst = r.Dst.String()
	}
	var paths []string
	for _, nh := range r.MultiPath {
		paths = append(paths, fmt.Sprintf("%d/%d/%v", nh.LinkIndex, nh.Hops, nh.Gw))
	}
	return fmt.Sprintf("%s fam %d table %d type %d tos %d prio %d dst %s oif %d gw %v paths %v",
		op, r.Family, r.Table, r.Type, r.Tos, r.Priority, dst, r.LinkIndex, r.Gw, paths)
}

// TestEventsOverflow: when the socket's buffer overflows (the mirror was
// too slow and the kernel dropped events), the reader says so and ends
// the subscription, which makes the mirror dump the table again; it does
// not go on as if nothing was lost.
func TestEventsOverflow(t *testing.T) {
	name, ip := mirrorNS(t)
	ns, err := netns.GetFromName(name)
	if err != nil {
		t.Fatal(err)
	}
	defer ns.Close()
	done := make(chan struct{})
	defer close(done)
	errs := make(chan error, 1)
	e, err := subscribeEvents(ns, 4096, true, done, func(err error) { errs <- err })
	if err != nil {
		t.Fatal(err)
	}
	// Hold every batch: the reader stops at its first events.
	var held []*eventBatchBuf
	for range eventBatches {
		held = append(held, <-e.free)
	}
	var batch strings.Builder
	for i := range 3000 {
		fmt.Fprintf(&batch, "route add 100.%d.%d.0/24 via 10.255.0.2\n", 64+i/250, i%250)
	}
	file := t.TempDir() + "/batch"
	if err := os.WriteFile(file, []byte(batch.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	ip("-batch", file)
	for _, b := range held {
		e.free <- b
	}
	got := 0
	for timeout := time.After(10 * time.Second); ; {
		select {
		case b, ok := <-e.ch:
			if ok {
				got += len(b.ev)
				b.ev, b.paths = b.ev[:0], b.paths[:0]
				e.free <- b
				continue
			}
		case <-timeout:
			t.Fatalf("the subscription did not end within 10 s (%d events read of 3000)", got)
		}
		break
	}
	select {
	case err := <-errs:
		if !strings.Contains(err.Error(), unix.ENOBUFS.Error()) {
			t.Errorf("the reader ended with %v, want %v", err, unix.ENOBUFS)
		}
	default:
		t.Errorf("the subscription ended without an error")
	}
	if got >= 3000 {
		t.Errorf("%d events read of 3000 through a 4 KiB buffer: nothing was lost, the test proves nothing", got)
	}
}

// TestDecodeNoAllocs: decoding a route event (a multipath route with
// gateways, as a daemon sends a full table's) into a batch and making
// the mirror's netlink.Route of it allocate nothing once the batch and
// the scratch have grown.
func TestDecodeNoAllocs(t *testing.T) {
	msg := routeMessage(t)
	b := &eventBatchBuf{ev: make([]routeEvent, 0, eventBatch)}
	var s routeScratch
	decode := func() {
		b.ev, b.paths = b.ev[:0], b.paths[:0]
		decodeEvents(msg, b)
		for i := range b.ev {
			s.route(&b.ev[i], b.paths)
		}
	}
	decode()
	if len(b.ev) != 1 || b.ev[0].np != 2 || !b.ev[0].add {
		t.Fatalf("decoded %+v (paths %+v), want one added route with two paths", b.ev, b.paths)
	}
	if r := s.route(&b.ev[0], b.paths); r.Dst.String() != "198.18.0.0/15" || r.MultiPath[1].Gw.String() != "10.254.0.2" || r.Priority != 20 {
		t.Errorf("route %+v", r)
	}
	if n := testing.AllocsPerRun(100, decode); n != 0 {
		t.Errorf("%.1f allocations per event, want 0", n)
	}
}

// routeMessage is an RTM_NEWROUTE for 198.18.0.0/15, metric 20, with two
// paths (via 10.255.0.2 on ifindex 3, via 10.254.0.2 on 5, weight 2).
func routeMessage(t *testing.T) []byte {
	t.Helper()
	attr := func(typ uint16, v []byte) []byte {
		a := make([]byte, 4, 4+len(v)+3)
		binary.NativeEndian.PutUint16(a[0:], uint16(4+len(v)))
		binary.NativeEndian.PutUint16(a[2:], typ)
		a = append(a, v...)
		for len(a)%4 != 0 {
			a = append(a, 0)
		}
		return a
	}
	u32 := func(v uint32) []byte { return binary.NativeEndian.AppendUint32(nil, v) }
	nexthop := func(hops uint8, ifindex uint32, gw [4]byte) []byte {
		g := attr(unix.RTA_GATEWAY, gw[:])
		n := make([]byte, 8)
		binary.NativeEndian.PutUint16(n[0:], uint16(8+len(g)))
		n[3] = hops
		binary.NativeEndian.PutUint32(n[4:], ifindex)
		return append(n, g...)
	}
	rtm := []byte{unix.AF_INET, 15, 0, 0, unix.RT_TABLE_MAIN, unix.RTPROT_BOOT, unix.RT_SCOPE_UNIVERSE, unix.RTN_UNICAST, 0, 0, 0, 0}
	body := append(rtm, attr(unix.RTA_DST, []byte{198, 18, 0, 0})...)
	body = append(body, attr(unix.RTA_PRIORITY, u32(20))...)
	body = append(body, attr(unix.RTA_MULTIPATH, append(nexthop(0, 3, [4]byte{10, 255, 0, 2}), nexthop(1, 5, [4]byte{10, 254, 0, 2})...))...)
	hdr := make([]byte, unix.NLMSG_HDRLEN)
	binary.NativeEndian.PutUint32(hdr[0:], uint32(unix.NLMSG_HDRLEN+len(body)))
	binary.NativeEndian.PutUint16(hdr[4:], unix.RTM_NEWROUTE)
	return append(hdr, body...)
}
