package packet

import "testing"

// TestCtAnnotation checks that Reset clears the connection-tracking
// annotation and Clone copies it: a stale flow index on a recycled buffer
// would make NAT rewrite a packet with another flow's addresses.
func TestCtAnnotation(t *testing.T) {
	pool := NewPool(2)
	p := pool.Get()
	table := new(CtTable)
	p.Ct = Ct{Table: table, Flow: 7, State: CtEstablished, Dir: 1, TTL: 63}
	q := p.Clone(pool)
	if q == nil || q.Ct != p.Ct {
		t.Fatalf("Clone: Ct = %+v, want %+v", q.Ct, p.Ct)
	}
	p.Reset()
	if p.Ct != (Ct{}) || p.Ct.State != CtUntracked {
		t.Errorf("Reset left Ct = %+v", p.Ct)
	}
	if q.Ct.Flow != 7 {
		t.Error("Reset of the original changed the clone")
	}
}
