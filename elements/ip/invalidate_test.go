package ip

import (
	"testing"

	"github.com/junction-dataplane/junction/elements/conntrack"
	"github.com/junction-dataplane/junction/elements/ip/route"
)

// TestRouteChangeInvalidatesFastPath: every published route change bumps
// the fast-path generation, so FastTrack drops entries learned under the
// old routes (a flow may now leave by another port or next hop).
func TestRouteChangeInvalidatesFastPath(t *testing.T) {
	r, err := route.ParseRoute("10.0.0.0/8 via 10.1.0.2 out 0")
	if err != nil {
		t.Fatal(err)
	}
	tbl, err := route.NewTable([]route.Route{r})
	if err != nil {
		t.Fatal(err)
	}
	before := conntrack.Generation()
	r2, err := route.ParseRoute("10.20.0.0/16 via 10.1.0.3 out 0")
	if err != nil {
		t.Fatal(err)
	}
	if err := tbl.Insert(r2); err != nil {
		t.Fatal(err)
	}
	if conntrack.Generation() == before {
		t.Error("inserting a route did not invalidate the fast path")
	}
	before = conntrack.Generation()
	if err := tbl.Replace([]route.Route{r}); err != nil {
		t.Fatal(err)
	}
	if conntrack.Generation() == before {
		t.Error("replacing the routes did not invalidate the fast path")
	}
}
