package reloadtest

import (
	"fmt"
	"strings"
	"testing"

	"github.com/junction-dataplane/junction/pipeline"
)

// natGraph: 10,000 UDP flows from g1 to 203.0.113.10 and one from g2 to
// 203.0.113.11, tracked and translated by the DNAT rules given.
func natGraph(t testing.TB, capacity int, rules ...string) *pipeline.Graph {
	t.Helper()
	src := fmt.Sprintf(`[forwarder]
workers = 1

[devices.g1]
driver = "gen"
src    = "198.18.0.1"
dst    = "203.0.113.10"
flows  = 10000

[devices.g2]
driver = "gen"
src    = "198.18.1.1"
dst    = "203.0.113.11"

[elements.ct]
type     = "Conntrack"
capacity = %d

[elements.dn]
type  = "DNAT"
rules = [%s]

[graph]
links = ["FromDevice(g1) -> ct", "FromDevice(g2) -> ct", "ct -> dn -> Discard"]
`, capacity, `"`+strings.Join(rules, `", "`)+`"`)
	g, err := pipeline.Parse("nat.toml", []byte(src))
	if err != nil {
		t.Fatal(err)
	}
	return g
}

func counter(s *pipeline.Snapshot, element, name string) uint64 {
	var v uint64
	for _, e := range s.Elements {
		if e.Element != element {
			continue
		}
		for _, c := range e.Counters {
			if c.Name == name {
				v += c.Value
			}
		}
	}
	return v
}

// reloadBuilt reloads a router from Build, driving its worker meanwhile.
func reloadBuilt(t *testing.T, r *pipeline.Router, g *pipeline.Graph) *pipeline.ReloadReport {
	t.Helper()
	type res struct {
		rep *pipeline.ReloadReport
		err error
	}
	done := make(chan res, 1)
	go func() {
		rep, err := r.ReloadGraph(g, false)
		done <- res{rep, err}
	}()
	for {
		select {
		case x := <-done:
			if x.err != nil {
				t.Fatal(x.err)
			}
			return x.rep
		default:
			r.Round(0)
		}
	}
}

const (
	ruleA = "udp 203.0.113.10:9 -> 10.0.0.2"
	ruleB = "udp 203.0.113.11:9 -> 10.0.0.3"
	ruleC = "tcp 203.0.113.20:80 -> 10.0.0.4:8080"
)

// TestNATStateSurvivesReload: a graph tracking 10,001 translated flows is
// reloaded with a DNAT rule added: every flow and its binding stays (the
// packets that follow find them: no new flow, no new translation); then
// with the rule of one flow removed: that flow, and only it, is dropped
// and counted; then with a smaller capacity: the flows that do not fit
// are counted.
func TestNATStateSurvivesReload(t *testing.T) {
	r := buildTracking(t, natGraph(t, 65536, ruleA, ruleB), 1, 10001)
	s0 := r.Snapshot()
	if n := counter(s0, "dn", "translated"); n != 10001 {
		t.Fatalf("translated %d flows, want 10001", n)
	}

	rep := reloadBuilt(t, r, natGraph(t, 65536, ruleA, ruleB, ruleC))
	if len(rep.Reconfigured) != 1 || !strings.HasPrefix(rep.Reconfigured[0], "dn ") {
		t.Errorf("reconfigured %v, want dn", rep.Reconfigured)
	}
	for i := 0; i < 2000; i++ {
		r.Round(0)
	}
	s1 := r.Snapshot()
	if n := counter(s1, "ct", "entries"); n != 10001 {
		t.Errorf("after adding a rule: %d flows, want 10001", n)
	}
	if a, b := counter(s0, "ct", "new"), counter(s1, "ct", "new"); a != b {
		t.Errorf("after adding a rule: %d new flows: the kept flows were not found", b-a)
	}
	if n := counter(s1, "dn", "translated"); n != 10001 {
		t.Errorf("after adding a rule: translated %d, want 10001 (bindings kept, none made again)", n)
	}
	if n := counter(s1, "dn", "reload: rule removed"); n != 0 {
		t.Errorf("after adding a rule: %d flows removed", n)
	}

	reloadBuilt(t, r, natGraph(t, 65536, ruleA, ruleC))
	s2 := r.Snapshot()
	if n := counter(s2, "dn", "reload: rule removed"); n != 1 {
		t.Errorf("after removing a rule: %d flows removed with their rule, want 1", n)
	}
	for i := 0; i < 2000; i++ {
		r.Round(0)
	}
	s2 = r.Snapshot()
	// The removed flow's next packet starts a new, untranslated flow;
	// the 10,000 others are still found.
	if a, b := counter(s1, "ct", "new"), counter(s2, "ct", "new"); b != a+1 {
		t.Errorf("after removing a rule: %d new flows, want 1 (the removed one's)", b-a)
	}
	if n := counter(s2, "dn", "translated"); n != 10001 {
		t.Errorf("after removing a rule: translated %d, want 10001", n)
	}
	if n := counter(s2, "ct", "entries"); n != 10001 {
		t.Errorf("after removing a rule: %d flows, want 10001", n)
	}

	rep = reloadBuilt(t, r, natGraph(t, 4096, ruleA, ruleC))
	s3 := r.Snapshot()
	if n := counter(s3, "ct", "entries"); n != 4096 {
		t.Errorf("after shrinking: %d flows, want 4096", n)
	}
	if a, b := counter(s2, "ct", "entries"), counter(s3, "ct", "reload: capacity shrunk"); b != a-4096 {
		t.Errorf("after shrinking from %d flows: %d counted as dropped, want %d", a, b, a-4096)
	}
	if gen, _, _ := r.Generation(); gen != 4 {
		t.Errorf("generation %d, want 4", gen)
	}
	_ = rep
}

func snatGraph(t testing.TB, to string) *pipeline.Graph {
	t.Helper()
	g, err := pipeline.Parse("snat.toml", []byte(`[forwarder]
workers = 1

[devices.g1]
driver = "gen"
src    = "192.168.1.10"
dst    = "198.51.100.1"
flows  = 100

[elements.ct]
type = "Conntrack"

[elements.sn]
type = "SNAT"
to   = "`+to+`"

[graph]
links = ["FromDevice(g1) -> ct -> sn -> Discard"]
`))
	if err != nil {
		t.Fatal(err)
	}
	return g
}

// TestSNATAddressRemoved: a reload that keeps SNAT's outside address keeps
// every binding; one that changes it removes the flows bound to the old
// address and counts them.
func TestSNATAddressRemoved(t *testing.T) {
	r, err := pipeline.Build(snatGraph(t, "203.0.113.1"), pipeline.Options{NoPin: true})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	for i := 0; counter(r.Snapshot(), "ct", "entries") < 100; i++ {
		if i > 10000 {
			t.Fatal("100 flows never tracked")
		}
		r.Round(0)
	}
	reloadBuilt(t, r, snatGraph(t, "203.0.113.1, 203.0.113.2"))
	if n := counter(r.Snapshot(), "sn", "reload: address removed"); n != 0 {
		t.Errorf("an address added: %d flows removed", n)
	}
	s0 := r.Snapshot()
	reloadBuilt(t, r, snatGraph(t, "203.0.113.2"))
	if n := counter(r.Snapshot(), "sn", "reload: address removed"); n != 100 {
		t.Errorf("the address removed: %d flows removed, want 100", n)
	}
	// Their next packets start them over, bound to the new address.
	for i := 0; i < 2000; i++ {
		r.Round(0)
	}
	s := r.Snapshot()
	if a, b := counter(s0, "ct", "new"), counter(s, "ct", "new"); b-a != 100 {
		t.Errorf("%d flows started over, want 100", b-a)
	}
	if a, b := counter(s0, "sn", "translated"), counter(s, "sn", "translated"); b-a != 100 {
		t.Errorf("%d flows bound again, want 100", b-a)
	}
}

// buildTracking builds g and drives its workers until Conntrack "ct"
// holds flows entries; the router is closed when the test ends.
func buildTracking(t *testing.T, g *pipeline.Graph, workers, flows int) *pipeline.Router {
	t.Helper()
	r, err := pipeline.Build(g, pipeline.Options{NoPin: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.Close() })
	for i := 0; counter(r.Snapshot(), "ct", "entries") < uint64(flows); i++ {
		if i > 100000 {
			t.Fatalf("only %d flows after %d rounds", counter(r.Snapshot(), "ct", "entries"), i)
		}
		for w := range workers {
			r.Round(w)
		}
	}
	return r
}
