package graphfile

import (
	"errors"
	"fmt"
	"path/filepath"
	"sort"
	"strings"

	"github.com/junction-dataplane/junction/drivers"
	"github.com/junction-dataplane/junction/elements"
)

// CheckEnv is the validation pass that forwarder check and Start share:
// everything about the graph that depends on the environment and can be
// known without opening a device. Each driver checks its config against
// the system (drivers.Check: a pcap read file exists and is a pcap, an
// interface exists), and each element whose config depends on its devices
// checks them (elements.EnvChecker: ARPQuerier's device has a MAC). Errors
// are located as Start's are, one per line; workers is what Start will
// run (0: one per CPU).
func CheckEnv(g *Graph, workers int) error {
	_, err := CheckEnvWarn(g, workers)
	return err
}

// CheckEnvWarn is CheckEnv that also returns the drivers' warnings
// (drivers.Info.Warnings: what run will do short of what the file asks,
// such as a fast path stepping down on this kernel), located at their
// devices. forwarder check prints them.
func CheckEnvWarn(g *Graph, workers int) ([]Warning, error) {
	var ws []Warning
	if workers <= 0 {
		workers = g.Workers
	}
	base := "."
	if g.File != "" {
		base = filepath.Dir(g.File)
	}
	batch := g.Batch
	var errs []error
	infos := map[string]drivers.Info{}
	for i, d := range g.Devices {
		if d.Driver == nil {
			continue
		}
		info, known, err := drivers.Check(d.Driver.Name, d.Config, drivers.OpenContext{
			Name: d.Name, Index: i, Workers: workers, Batch: batch, BaseDir: base,
			Addresses: d.Addresses, MAC: d.MAC,
		})
		for _, w := range info.Warnings {
			ws = append(ws, Warning{Pos: d.Pos, Device: d.Name, Type: d.Driver.Name, Msg: w})
		}
		if err != nil {
			errs = append(errs, fmt.Errorf("%s: device %q (driver %s): %w", d.Pos, d.Name, d.Driver.Name, err))
			continue
		}
		if known {
			infos[d.Name] = info
		}
	}
	errs = append(errs, checkOffload(g, infos)...) // check_offload.go
	lookup := func(name string) (drivers.Info, bool) {
		i, ok := infos[name]
		return i, ok
	}
	for _, e := range g.Elements {
		c, ok := e.Config.(elements.EnvChecker)
		if !ok || e.Type == nil {
			continue
		}
		if err := safely(e.Type.Name+" CheckEnv", func() error { return c.CheckEnv(lookup) }); err != nil {
			errs = append(errs, fmt.Errorf("%s: element %q (%s): %w", e.Pos, e.Name, e.Type.Name, err))
		}
	}
	errs = append(errs, checkMemory(g, workers)...) // check_memory.go
	ws = append(ws, LinkRateWarnings(g)...)         // check_linkrate.go
	return ws, errors.Join(errs...)
}

// Warning is a part of a valid graph that cannot work as written: a NAT
// with no Conntrack before it, two sources splitting one device's
// traffic, routed packets sent with the Ethernet header they came with.
// It is located like a ConfigError.
type Warning struct {
	Pos     Pos
	Device  string // a device's warning (CheckEnvWarn), else Element's
	Element string
	Type    string
	Msg     string
}

func (w Warning) String() string {
	return (&ConfigError{Pos: w.Pos, Device: w.Device, Element: w.Element, Type: w.Type, Msg: w.Msg}).Error()
}

// The element types whose role the warnings need: routing ones decide a
// packet's next hop without touching its Ethernet header; rewriting ones
// give it the addresses of the link it leaves by (or build the frame
// themselves). A Plugin may do either: it counts as rewriting, so that
// no warning is a false alarm.
var (
	routingTypes   = map[string]bool{"IPLookup": true, "DecTTL": true, "DecHopLimit": true}
	rewritingTypes = map[string]bool{"EtherRewrite": true, "ARPQuerier": true, "ARPResponder": true,
		"ICMPPingResponder": true, "FastTrack": true, "Plugin": true,
		"NDPQuerier": true, "NDPResponder": true, "ICMP6PingResponder": true, "RouterAdvertiser": true}
)

// Warnings analyses a loaded graph for what cannot work as written. The
// graph runs all the same; forwarder check prints them (and with -strict
// fails on them).
func Warnings(g *Graph) []Warning {
	a := newAnalysis(g)
	var ws []Warning
	ws = append(ws, a.upstreamWarnings()...)
	ws = append(ws, a.sharedSourceWarnings()...)
	ws = append(ws, a.unrewrittenWarnings()...)
	ws = append(ws, a.querierDeviceWarnings()...)
	ws = append(ws, a.learnWarnings()...) // check_learn.go
	ws = append(ws, a.configWarnings()...)
	ws = append(ws, a.directionWarnings()...) // check_direction.go
	sort.SliceStable(ws, func(i, j int) bool { return ws[i].Pos.Line < ws[j].Pos.Line })
	return ws
}

type analysis struct {
	g   *Graph
	idx map[string]int
	out [][]edge // element → its links
}

// edge is a link from output port of one element to input in of to.
type edge struct{ port, to, in int }

// at is a packet's place on its way: an element and the input it came in
// by (0 for a source).
type at struct{ el, in int }

func newAnalysis(g *Graph) *analysis {
	a := &analysis{g: g, idx: map[string]int{}, out: make([][]edge, len(g.Elements))}
	for i, e := range g.Elements {
		a.idx[e.Name] = i
	}
	for _, l := range g.Links {
		f, ok1 := a.idx[l.From]
		t, ok2 := a.idx[l.To]
		if ok1 && ok2 {
			a.out[f] = append(a.out[f], edge{l.FromPort, t, l.ToPort})
		}
	}
	return a
}

// next lists where packets that came into p.el by input p.in may go. An
// element with as many outputs as inputs, several of each, keeps its
// paths apart (FastTrackLearn: input i leaves by output i); any other
// element may send what came in by any input to any output.
func (a *analysis) next(p at) []at {
	e := a.g.Elements[p.el]
	var out []at
	for _, ed := range a.out[p.el] {
		if e.In > 1 && e.In == e.Out && ed.port != p.in {
			continue
		}
		out = append(out, at{ed.to, ed.in})
	}
	return out
}

func (a *analysis) typeName(i int) string {
	if t := a.g.Elements[i].Type; t != nil {
		return t.Name
	}
	return ""
}

func (a *analysis) warn(i int, format string, args ...any) Warning {
	e := a.g.Elements[i]
	return Warning{Pos: e.Pos, Element: e.Name, Type: a.typeName(i), Msg: fmt.Sprintf(format, args...)}
}

func (a *analysis) sources() []int {
	var out []int
	for i, e := range a.g.Elements {
		if e.Type != nil && e.Type.Source {
			out = append(out, i)
		}
	}
	return out
}

// reach returns the elements reachable from start without entering an
// element of type avoid (start itself included).
func (a *analysis) reach(start int, avoid string) []bool {
	return a.reachFrom(at{start, 0}, avoid)
}

func (a *analysis) reachFrom(start at, avoid string) []bool {
	seen := make([]bool, len(a.g.Elements))
	seen[start.el] = true
	visited := map[at]bool{start: true}
	queue := []at{start}
	for len(queue) > 0 {
		p := queue[0]
		queue = queue[1:]
		for _, q := range a.next(p) {
			if visited[q] || avoid != "" && a.typeName(q.el) == avoid {
				continue
			}
			visited[q] = true
			seen[q.el] = true
			queue = append(queue, q)
		}
	}
	return seen
}

// upstreamWarnings: an element that needs another type upstream
// (elements.Upstream) has none before it on any path. (Some paths
// around it may be meant: nat-gateway.toml routes the router's own ping
// replies through SNAT untracked.)
func (a *analysis) upstreamWarnings() []Warning {
	var ws []Warning
	for i, e := range a.g.Elements {
		u, ok := e.Config.(elements.Upstream)
		if !ok {
			continue
		}
		typ, why := u.NeedsUpstream()
		if typ == "" {
			continue
		}
		covered := false
		for j := range a.g.Elements {
			if j != i && a.typeName(j) == typ && a.reach(j, "")[i] {
				covered = true
				break
			}
		}
		if covered {
			continue
		}
		for _, s := range a.sources() {
			if a.reach(s, "")[i] {
				ws = append(ws, a.warn(i, "packets from %s reach it, and no %s is before it: %s", a.g.Elements[s].Name, typ, why))
				break
			}
		}
	}
	return ws
}

// sharedSourceWarnings: two source elements receive from one device; each
// packet goes to one of them, so each sees part of the traffic.
func (a *analysis) sharedSourceWarnings() []Warning {
	var ws []Warning
	first := map[string]int{}
	for _, s := range a.sources() {
		for _, ref := range deviceRefs(a.g.Elements[s]) {
			if f, dup := first[ref.dev]; dup {
				ws = append(ws, a.warn(s, "%s (line %d) also receives from device %q: each packet goes to one of them, so each sees part of the traffic (use one and a Tee to copy it)",
					a.g.Elements[f].Name, a.g.Elements[f].Pos.Line, ref.dev))
				continue
			}
			first[ref.dev] = s
		}
	}
	return ws
}

// unrewrittenWarnings: a packet routed (IPLookup, DecTTL) reaches a
// ToDevice without any element giving it the next hop's Ethernet
// addresses: it would leave with the ones it arrived with, addressed to
// the router itself.
func (a *analysis) unrewrittenWarnings() []Warning {
	type state struct {
		p      at
		router int // the routing element the packet passed last, -1: none since a rewrite
	}
	var ws []Warning
	warned := map[int]bool{}
	seen := map[state]bool{}
	var queue []state
	for _, s := range a.sources() {
		st := state{at{s, 0}, -1}
		seen[st] = true
		queue = append(queue, st)
	}
	for len(queue) > 0 {
		st := queue[0]
		queue = queue[1:]
		for _, q := range a.next(st.p) {
			ns := state{q, st.router}
			switch t := a.typeName(q.el); {
			case rewritingTypes[t]:
				ns.router = -1
			case routingTypes[t]:
				ns.router = q.el
			case t == "ToDevice" && st.router >= 0 && !warned[q.el]:
				warned[q.el] = true
				ws = append(ws, a.warn(q.el, "packets routed by %s (%s) reach it with the Ethernet addresses they arrived with: put an EtherRewrite or an ARPQuerier before it",
					a.g.Elements[st.router].Name, a.typeName(st.router)))
			}
			if !seen[ns] {
				seen[ns] = true
				queue = append(queue, ns)
			}
		}
	}
	return ws
}

// querierDeviceWarnings: an ARPQuerier addresses frames from its device's
// MAC and asks its device's link; a ToDevice of another device after it
// sends them on a link where that MAC and those answers do not belong.
func (a *analysis) querierDeviceWarnings() []Warning {
	var ws []Warning
	for i := range a.g.Elements {
		if a.typeName(i) != "ARPQuerier" {
			continue
		}
		refs := deviceRefs(a.g.Elements[i])
		if len(refs) == 0 {
			continue
		}
		dev := refs[0].dev
		var other []string
		r := a.reachFrom(at{i, 0}, "ARPQuerier")
		for j, ok := range r {
			if !ok || a.typeName(j) != "ToDevice" {
				continue
			}
			for _, ref := range deviceRefs(a.g.Elements[j]) {
				if ref.dev != dev {
					other = append(other, fmt.Sprintf("%s (device %q)", a.g.Elements[j].Name, ref.dev))
				}
			}
		}
		if len(other) > 0 {
			ws = append(ws, a.warn(i, "resolves next hops on device %q but its packets leave by %s: they would carry %q's MAC on another link",
				dev, strings.Join(other, ", "), dev))
		}
	}
	return ws
}

// configWarnings: what the configs themselves say they cannot do
// (elements.Warner).
func (a *analysis) configWarnings() []Warning {
	var ws []Warning
	for i, e := range a.g.Elements {
		w, ok := e.Config.(elements.Warner)
		if !ok {
			continue
		}
		for _, msg := range w.Warnings() {
			ws = append(ws, a.warn(i, "%s", msg))
		}
	}
	return ws
}
