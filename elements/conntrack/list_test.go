package conntrack

import (
	"testing"
	"time"

	"github.com/junction-dataplane/junction/elements"
	"github.com/junction-dataplane/junction/packet"
)

func u32(a, b, c, d byte) uint32 { return uint32(a)<<24 | uint32(b)<<16 | uint32(c)<<8 | uint32(d) }

// TestFlows lists live flows only, with their state, NAT, timeout left and
// counters, and stops when yield says so; a closed tracker lists nothing.
func TestFlows(t *testing.T) {
	now := int64(1e12)
	tab := NewTable(16, DefaultTimeouts(), func() int64 { return now })
	e := &Conntrack{t: tab, worker: 3}

	web := Tuple{Src: u32(203, 0, 113, 2), Dst: u32(203, 0, 113, 1), Sport: 40000, Dport: 8080, Proto: packet.ProtoTCP}
	i, _ := tab.Create(&web, now)
	c := tab.Conn(i)
	c.State, c.Expires = TCPEstablished, now+int64(90*time.Second)
	c.Flags |= FlagDNAT | FlagSeenReply
	c.Packets, c.Bytes = [2]uint32{5, 4}, [2]uint64{500, 4000}
	tab.SetAssured(i)
	tab.SetReply(i, &Tuple{Src: u32(192, 168, 1, 10), Dst: u32(203, 0, 113, 2), Sport: 80, Dport: 40000, Proto: packet.ProtoTCP})

	dns := Tuple{Src: u32(192, 168, 1, 10), Dst: u32(8, 8, 8, 8), Sport: 5353, Dport: 53, Proto: packet.ProtoUDP}
	j, _ := tab.Create(&dns, now)
	tab.Conn(j).Expires = now - 1 // expired: listed with no time left until the sweep removes it

	gone := Tuple{Src: 1, Dst: 2, Sport: 3, Dport: 4, Proto: packet.ProtoUDP}
	k, _ := tab.Create(&gone, now)
	tab.Delete(k)

	var got []elements.Flow
	e.Flows(func(f elements.Flow) bool { got = append(got, f); return true })
	if len(got) != 2 {
		t.Fatalf("%d flows listed, want 2: %+v", len(got), got)
	}
	w := got[0]
	if w.Proto != "tcp" || w.Orig.Src.String() != "203.0.113.2" || w.Orig.Dport != 8080 || w.Reply.Src.String() != "192.168.1.10" ||
		w.Reply.Sport != 80 || w.State != "ESTABLISHED" || !w.Assured || w.NAT != "dnat" || w.Timeout != 90*time.Second ||
		w.Packets != [2]uint64{5, 4} || w.Bytes != [2]uint64{500, 4000} || w.Worker != 3 {
		t.Errorf("web flow: %+v", w)
	}
	if d := got[1]; d.Proto != "udp" || d.State != "UNREPLIED" || d.Timeout != 0 || d.NAT != "" {
		t.Errorf("dns flow: %+v", d)
	}
	n := 0
	e.Flows(func(elements.Flow) bool { n++; return false })
	if n != 1 {
		t.Errorf("yield returning false: %d calls", n)
	}
	e.t = nil // as after Close
	e.Flows(func(elements.Flow) bool { t.Error("a closed tracker listed a flow"); return true })
}
