package main

import (
	"fmt"
	"io"
	"net/netip"
	"sort"
	"text/tabwriter"
	"time"

	"github.com/junction-dataplane/junction/elements/nat"
	"github.com/junction-dataplane/junction/internal/control"
)

// `show nat`: the endpoint-independent mappings of every SNAT, from each
// worker's instance (the worker that owns the mapping's port).

type natRow struct {
	Element string `json:"element"`
	nat.Mapping
}

type natResult struct {
	Filter   string   `json:"filter,omitempty"` // the address asked for
	Mappings []natRow `json:"mappings"`
	Matched  int      `json:"matched"`
	Total    int      `json:"total"`
	Limited  bool     `json:"limited,omitempty"`
}

func (cs *ctlServer) showNAT(args []string) (any, error) {
	fs := argFlags("show nat")
	n := fs.Int("n", 100, "show at most this many mappings (0: all)")
	pos, err := parseArgs(fs, args)
	if err != nil {
		return nil, err
	}
	if *n < 0 {
		return nil, control.Usagef("show nat: -n %d: want ≥ 0", *n)
	}
	var filter netip.Addr
	switch len(pos) {
	case 0:
	case 1:
		if filter, err = netip.ParseAddr(pos[0]); err != nil {
			return nil, control.Usagef("show nat: %q: want an inside or outside address", pos[0])
		}
	default:
		return nil, control.Usagef("show nat: want at most one address, got %d arguments", len(pos))
	}
	g := cs.graph()
	idx := elementsOf[nat.MappingLister](cs.r, g)
	if len(idx) == 0 {
		return nil, control.Usagef("show nat: this graph has no SNAT")
	}
	res := &natResult{Mappings: []natRow{}}
	if filter.IsValid() {
		res.Filter = filter.String()
	}
	for _, i := range idx {
		for _, inst := range cs.r.Instances(i) {
			inst.(nat.MappingLister).Mappings(func(m nat.Mapping) bool {
				res.Total++
				if filter.IsValid() && m.Inside.Addr() != filter && m.Outside.Addr() != filter {
					return true
				}
				res.Matched++
				if *n > 0 && len(res.Mappings) >= *n {
					res.Limited = true
					return true
				}
				res.Mappings = append(res.Mappings, natRow{Element: g.Elements[i].Name, Mapping: m})
				return true
			})
		}
	}
	sort.SliceStable(res.Mappings, func(a, b int) bool {
		x, y := res.Mappings[a], res.Mappings[b]
		if c := x.Inside.Compare(y.Inside); c != 0 {
			return c < 0
		}
		return x.Proto < y.Proto
	})
	return res, nil
}

func printNAT(w io.Writer, r *natResult) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "ELEMENT\tPROTO\tINSIDE\tOUTSIDE\tFILTERING\tREMOTES\tAGE\tTIMEOUT\tWORKER")
	for _, m := range r.Mappings {
		remotes := "-"
		if len(m.Remotes) > 0 {
			remotes = fmt.Sprint(m.Remotes)
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%d\n", m.Element, m.Proto, m.Inside, m.Outside, m.Filtering,
			remotes, m.Age.Round(time.Second), m.Timeout.Round(time.Second), m.Worker)
	}
	tw.Flush()
	return printMatched(w, r.Matched, r.Total, len(r.Mappings), r.Limited, "mappings")
}

// printMatched ends a listing that -n may have cut: how many of the total
// matched, and how many are shown when not all are.
func printMatched(w io.Writer, matched, total, shown int, limited bool, what string) error {
	more := ""
	if limited {
		more = fmt.Sprintf(" (first %d shown: -n 0 shows all)", shown)
	}
	_, err := fmt.Fprintf(w, "%d of %d %s match%s\n", matched, total, what, more)
	return err
}
