package conntrack

import (
	"net/netip"
	"testing"
	"time"

	"github.com/junction-dataplane/junction/elements"
	"github.com/junction-dataplane/junction/packet"
)

func a16(s string) [16]byte { return netip.MustParseAddr(s).As16() }

// TestFlows6 lists IPv6 flows after the IPv4 ones, with their state,
// counters and timeout, ICMPv6 named icmp6, and a deleted entry left out;
// yield returning false stops the IPv6 pass too.
func TestFlows6(t *testing.T) {
	now := int64(1e12)
	tab := NewTable(16, DefaultTimeouts(), func() int64 { return now })
	tab.t6 = NewTable6(16, DefaultTimeouts())
	e := &Conntrack{t: tab, worker: 1}

	v4 := Tuple{Src: u32(192, 168, 1, 10), Dst: u32(8, 8, 8, 8), Sport: 5353, Dport: 53, Proto: packet.ProtoUDP}
	tab.Create(&v4, now)

	t6 := tab.t6
	now6 := t6.Now()
	web := Tuple6{Src: a16("2001:db8:1::10"), Dst: a16("2001:db8:2::1"), Sport: 40000, Dport: 443, Proto: packet.ProtoTCP}
	i, _ := t6.create(&web, now6)
	c := t6.Conn(i)
	c.State, c.Expires = TCPEstablished, now6+int64(90*time.Second)
	c.Flags |= FlagSeenReply | FlagAssured
	c.Packets, c.Bytes = [2]uint32{7, 6}, [2]uint64{700, 6000}
	ping := Tuple6{Src: a16("2001:db8:1::10"), Dst: a16("2001:db8:2::2"), Sport: 9, Dport: 9, Proto: protoICMPv6}
	t6.create(&ping, now6)
	gone := Tuple6{Src: a16("2001:db8::1"), Dst: a16("2001:db8::2"), Sport: 1, Dport: 2, Proto: packet.ProtoUDP}
	k, _ := t6.create(&gone, now6)
	t6.delete(k)

	var got []elements.Flow
	e.Flows(func(f elements.Flow) bool { got = append(got, f); return true })
	if len(got) != 3 {
		t.Fatalf("%d flows listed, want 3 (1 IPv4, 2 IPv6): %+v", len(got), got)
	}
	if !got[0].Orig.Src.Is4() {
		t.Errorf("first flow %+v, want the IPv4 one first", got[0])
	}
	w := got[1]
	if w.Proto != "tcp" || w.Orig.Src != netip.MustParseAddr("2001:db8:1::10") || w.Orig.Dport != 443 ||
		w.Reply.Src != netip.MustParseAddr("2001:db8:2::1") || w.Reply.Dport != 40000 || w.State != "ESTABLISHED" ||
		!w.Assured || w.NAT != "" || w.Timeout <= 80*time.Second || w.Timeout > 90*time.Second ||
		w.Packets != [2]uint64{7, 6} || w.Bytes != [2]uint64{700, 6000} || w.Worker != 1 {
		t.Errorf("IPv6 web flow: %+v", w)
	}
	if p := got[2]; p.Proto != "icmp6" || p.State != "UNREPLIED" || p.Orig.Sport != 9 {
		t.Errorf("IPv6 ping flow: %+v", p)
	}
	n := 0
	e.Flows(func(f elements.Flow) bool { n++; return f.Orig.Src.Is4() })
	if n != 2 {
		t.Errorf("yield returning false on the first IPv6 flow: %d calls, want 2", n)
	}
}
