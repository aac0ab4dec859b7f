package ip

import (
	"errors"
	"reflect"
	"sync"
	"sync/atomic"

	"github.com/junction-dataplane/junction/elements"
	"github.com/junction-dataplane/junction/elements/fastgen"
	"github.com/junction-dataplane/junction/elements/ip/route"
	"github.com/junction-dataplane/junction/elements/ip/route/fpmirror"
	"github.com/junction-dataplane/junction/elements/ip/route/kernelmirror"
	"github.com/junction-dataplane/junction/elements/ip/tables"
	"github.com/junction-dataplane/junction/elements/offloadkey"
)

// Route tables shared by lookups. Every IPLookup that reads one table of
// the graph ([tables.NAME]) reads one route.Table: one FIB in memory,
// looked up by every worker's instance of every such lookup without locks,
// each change published to all of them at once (route.Table's
// read-copy-update). An IPLookup with routes of its own has a table only
// its instances read. The tables of a router live in its graph state
// (elements.GraphState), which a reload keeps, so that a reload finds
// them:
//
//   - a table whose configuration the reload leaves unchanged is kept as
//     it is, with the routes the kernel mirror and the control plane added
//     since start, and its kernel and fast-path mirrors running (a million
//     routes stay where they are; when the table has a fast-path offload,
//     only if the lookup reading it is unchanged too, since the reload may
//     reopen the devices its mirror programs);
//   - one whose configuration changed is built anew, as at start, and the
//     routes added live are applied again on top (livecarry.go); the old
//     one serves the old graph until its last instance closes.
//
// Validating the new configuration does not parse an unchanged
// routes_file again (route.LoadSet).

// sharedTable is one running table and its mirrors.
type sharedTable struct {
	key   tableKey
	set   *tableSet
	table *route.Table
	ksync *kernelmirror.Sync
	off   *fpmirror.Sync
	refs  atomic.Int32 // instances of every lookup reading it
	live  liveRoutes   // what the control socket changed (live.go)
	cfg   *tables.Config
	// reporter is the lookup whose reload plan speaks for the table (the
	// first that read it), so that a plan is not repeated per lookup.
	reporter string
	// minOuts is the fewest outputs of a lookup reading the table: a
	// route added at run time must leave by a port every reader has.
	minOuts atomic.Int32
}

// tableKey names a table of a router: a [tables] section, or the element
// whose own table it is.
type tableKey struct {
	name string
	own  bool
}

// tableSet is a router's running tables, each name's generations oldest
// first (during a reload the old graph's and the new one's).
type tableSet struct {
	mu   sync.Mutex
	gens map[tableKey][]*sharedTable
}

type tableSetKey struct{}

func newTableSet() *tableSet { return &tableSet{gens: map[tableKey][]*sharedTable{}} }

// acquireTable returns the table the lookup with config c built in ctx
// reads: one this graph has built already for another lookup, the
// running one if the reload keeps it, or a new one.
func acquireTable(ctx *elements.Context, c *IPLookupConfig) (*sharedTable, error) {
	key := tableKey{name: c.tbl.Name}
	if c.ownTable() {
		key = tableKey{name: ctx.Name, own: true}
	}
	set := elements.GraphValue(ctx, tableSetKey{}, newTableSet)
	set.mu.Lock()
	defer set.mu.Unlock()
	gens := set.gens[key]
	for _, g := range gens {
		if g.cfg == c.tbl {
			return g, nil // this graph's, built for another lookup
		}
	}
	var prev *sharedTable
	if n := len(gens); n > 0 {
		prev = gens[n-1]
	}
	if prev != nil && reflect.DeepEqual(prev.cfg, c.tbl) && (len(c.tbl.Offload) == 0 || ctx.Previous().SameConfig) {
		prev.cfg = c.tbl // the same contents: the new graph's lookups find it by pointer
		return prev, nil
	}
	sh, err := buildTable(ctx, c.tbl, prev)
	if err != nil {
		return nil, err
	}
	sh.key, sh.set, sh.reporter = key, set, ctx.Name
	sh.minOuts.Store(int32(route.MaxPort + 1))
	set.gens[key] = append(gens, sh)
	return sh, nil
}

// buildTable makes the table of config c, with the routes added live to
// prev (the running generation, if any) applied on top.
func buildTable(ctx *elements.Context, c *tables.Config, prev *sharedTable) (*sharedTable, error) {
	t, err := route.NewTableChecked(c.Parsed(), c.Limits(), c.Checked())
	if err != nil {
		return nil, err
	}
	sh := &sharedTable{table: t, cfg: c}
	if err := applyLive(prev, c, t, sh); err != nil {
		return nil, err
	}
	// The router's next reload finds these routes validated.
	route.ContextCache(ctx).Remember(c.Set())
	// Every new version makes the graph's fast-path entries stale.
	t.OnChange(fastgen.Of(ctx).Invalidate)
	if c.Kernel() {
		ks, err := kernelmirror.Start(t, c.KernelOptions(), ctx.Stats)
		if err != nil {
			return nil, err
		}
		sh.ksync = ks
	}
	if len(c.Offload) > 0 {
		ports, _, fp, err := offloadkey.Resolve(ctx.Devices, "offload", c.Offload)
		if err == nil {
			sh.off, err = fpmirror.Start(t, fp, ports, ctx.Stats)
		}
		if err != nil {
			if sh.ksync != nil {
				sh.ksync.Close()
			}
			return nil, err
		}
		if prev != nil {
			// Both mirror into the same devices until one closes.
			fpmirror.HandOver(prev.off, sh.off)
		}
	}
	return sh, nil
}

// noteOuts lowers minOuts to n.
func (sh *sharedTable) noteOuts(n int) {
	for {
		m := sh.minOuts.Load()
		if int32(n) >= m || sh.minOuts.CompareAndSwap(m, int32(n)) {
			return
		}
	}
}

// release drops one instance's hold; the last one stops the mirrors and
// forgets the table.
func (sh *sharedTable) release() error {
	if sh.set != nil {
		sh.set.mu.Lock()
		defer sh.set.mu.Unlock()
	}
	if sh.refs.Add(-1) != 0 {
		return nil
	}
	if sh.set != nil {
		gens := sh.set.gens[sh.key]
		for i, g := range gens {
			if g == sh {
				gens = append(gens[:i:i], gens[i+1:]...)
				break
			}
		}
		if len(gens) == 0 {
			delete(sh.set.gens, sh.key)
		} else {
			sh.set.gens[sh.key] = gens
		}
	}
	var errs []error
	if sh.off != nil {
		errs = append(errs, sh.off.Close())
	}
	if sh.ksync != nil {
		errs = append(errs, sh.ksync.Close())
	}
	return errors.Join(errs...)
}
