package conntrack_test

import (
	"testing"

	"github.com/junction-dataplane/junction/elements/conntrack"
	"github.com/junction-dataplane/junction/packet"
)

// TestFlowOfFamily: a packet tracked in one family's table is never read
// as the other's (packet.Ct.Table points to the tables' common header,
// whose V6 tells them apart), and a packet without a table has no flow.
func TestFlowOfFamily(t *testing.T) {
	t4 := conntrack.NewTable(16, conntrack.DefaultTimeouts(), nil)
	t6 := conntrack.NewTable6(16, conntrack.DefaultTimeouts())
	if t4.CtTable().V6 || !t6.CtTable().V6 {
		t.Fatalf("headers: IPv4 table V6 = %v, IPv6 table V6 = %v", t4.CtTable().V6, t6.CtTable().V6)
	}
	var p packet.Packet
	p.Ct = packet.Ct{Table: t6.CtTable(), Flow: 1, State: packet.CtNew}
	if tab, c := conntrack.FlowOf(&p); tab != nil || c != nil {
		t.Errorf("FlowOf of a packet tracked in the IPv6 table = %p, %p", tab, c)
	}
	p.Ct.Table = t4.CtTable()
	if tab, c := conntrack.FlowOf6(&p); tab != nil || c != nil {
		t.Errorf("FlowOf6 of a packet tracked in the IPv4 table = %p, %p", tab, c)
	}
	// Flow 1 of an empty table is not live: neither finds it.
	if tab, c := conntrack.FlowOf(&p); tab != nil || c != nil {
		t.Errorf("FlowOf of a free entry = %p, %p", tab, c)
	}
	p.Ct = packet.Ct{}
	if tab, c := conntrack.FlowOf(&p); tab != nil || c != nil {
		t.Errorf("FlowOf of an untracked packet = %p, %p", tab, c)
	}
}
