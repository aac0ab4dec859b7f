package ip

import (
	"testing"

	"github.com/junction-dataplane/junction/elements"
	"github.com/junction-dataplane/junction/elements/elementtest"
	"github.com/junction-dataplane/junction/elements/fastgen"
	"github.com/junction-dataplane/junction/elements/ip/route"
)

// TestRouteChangeInvalidatesFastPath: every published route change bumps
// the fast-path generation of the IPLookup's graph, so FastTrack drops
// entries learned under the old routes (a flow may now leave by another
// port or next hop); another graph's generation does not move.
func TestRouteChangeInvalidatesFastPath(t *testing.T) {
	st, other := elements.NewGraphState(), elements.NewGraphState()
	h := elementtest.New(t, "IPLookup", &IPLookupConfig{Routes: []string{"10.0.0.0/8 via 10.1.0.2 out 0"}, Miss: -1},
		&elementtest.Options{Sink: true, State: st})
	elementtest.New(t, "IPLookup", &IPLookupConfig{Routes: []string{"10.0.0.0/8 via 10.1.0.2 out 0"}, Miss: -1},
		&elementtest.Options{Sink: true, State: other})
	gen := fastgen.Of(h.Context)
	otherGen := fastgen.Of(elements.NewContext("x", 0, 1, 64, nil, &elements.Stats{}, nil, nil, nil).WithState(other))
	tbl := h.Element.(*IPLookup).table
	r, err := route.ParseRoute("10.0.0.0/8 via 10.1.0.2 out 0")
	if err != nil {
		t.Fatal(err)
	}
	r2, err := route.ParseRoute("10.20.0.0/16 via 10.1.0.3 out 0")
	if err != nil {
		t.Fatal(err)
	}
	before, otherBefore := gen.Current(), otherGen.Current()
	if err := tbl.Insert(r2); err != nil {
		t.Fatal(err)
	}
	if gen.Current() == before {
		t.Error("inserting a route did not invalidate the fast path")
	}
	before = gen.Current()
	if err := tbl.Replace([]route.Route{r}); err != nil {
		t.Fatal(err)
	}
	if gen.Current() == before {
		t.Error("replacing the routes did not invalidate the fast path")
	}
	if otherGen.Current() != otherBefore {
		t.Error("a route change in one graph invalidated another graph's fast path")
	}
}
