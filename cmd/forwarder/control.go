package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/netip"
	"strings"
	"sync"
	"time"

	"github.com/junction-dataplane/junction/internal/control"
	"github.com/junction-dataplane/junction/pipeline"
)

// The server side of the control socket: what `forwarder run` registers on
// it. The client commands (show.go, route.go, trace.go) send their
// arguments as typed; the server parses them, so that a malformed one is
// reported the same way whichever client sent it, and answers with the
// JSON types below, which the clients print as tables or pass on as JSON.

// ctlServer is a running router's control state.
type ctlServer struct {
	*ctlState
	// g is the graph one call works on: each call pins the one running
	// when it starts, so that a reload during the call (which replaces
	// the graph) never mixes two graphs' element indexes.
	g *pipeline.Graph
}

// ctlState is what the calls share.
type ctlState struct {
	r *pipeline.Router

	// baseline is what `clear counters` recorded: shown counters are the
	// difference from it (counters themselves are never written by
	// anyone but their worker, so clearing races with nothing).
	baseMu   sync.Mutex
	baseline *pipeline.Snapshot

	rates *rateSampler
}

// startControl serves the control socket at path for r.
func startControl(r *pipeline.Router, path string) (*control.Server, *ctlServer, error) {
	cs := &ctlServer{ctlState: &ctlState{r: r}}
	srv := control.NewServer()
	pin := func(f func(*ctlServer, context.Context, []string) (any, error)) control.HandlerFunc {
		return func(ctx context.Context, args []string) (any, error) {
			return f(&ctlServer{ctlState: cs.ctlState, g: r.Graph()}, ctx, args)
		}
	}
	srv.Handle("show", pin((*ctlServer).show))
	srv.Handle("clear", pin((*ctlServer).clear))
	srv.Handle("route", pin((*ctlServer).route))
	srv.Handle("trace", pin((*ctlServer).trace))
	srv.Handle("capture", pin((*ctlServer).capture))
	srv.Handle("reload", pin((*ctlServer).reload))
	srv.Handle("snapshot", pin((*ctlServer).snapshot))
	srv.Handle("graph", pin((*ctlServer).graphDOT)) // graphctl.go
	if err := srv.Listen(path); err != nil {
		return nil, nil, err
	}
	cs.rates = newRateSampler(r)
	go cs.rates.run(r.Done())
	return srv, cs, nil
}

// argFlags is a flag set for a command's arguments on the server: its
// errors are one line, returned rather than printed.
func argFlags(name string) *flag.FlagSet {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	return fs
}

// parseArgs parses args (flags may follow positional arguments, as in
// `show flows tcp -n 5`) and returns the positional ones.
func parseArgs(fs *flag.FlagSet, args []string) ([]string, error) {
	var pos []string
	for {
		if err := fs.Parse(args); err != nil {
			if errors.Is(err, flag.ErrHelp) {
				return nil, control.Usagef("%s: flags: %s", fs.Name(), flagList(fs))
			}
			return nil, control.Usagef("%s: %v", fs.Name(), err)
		}
		args = fs.Args()
		if len(args) == 0 {
			return pos, nil
		}
		pos = append(pos, args[0])
		args = args[1:]
	}
}

func flagList(fs *flag.FlagSet) string {
	var s []string
	fs.VisitAll(func(f *flag.Flag) { s = append(s, "-"+f.Name) })
	return strings.Join(s, " ")
}

// elementsOf returns the indices of the elements whose instances
// implement T (checked on worker 0).
func elementsOf[T any](r *pipeline.Router, g *pipeline.Graph) []int {
	var out []int
	for i := range g.Elements {
		inst := r.Instances(i)
		if len(inst) == 0 {
			continue
		}
		if _, ok := inst[0].(T); ok {
			out = append(out, i)
		}
	}
	return out
}

// pickElement chooses the element of kind what (its type name, for
// messages) named by name, or the only one.
func pickElement[T any](cs *ctlServer, what, name string) (int, T, error) {
	var zero T
	idx := elementsOf[T](cs.r, cs.graph())
	names := make([]string, len(idx))
	for i, j := range idx {
		names[i] = cs.graph().Elements[j].Name
	}
	if name == "" {
		switch len(idx) {
		case 0:
			return -1, zero, control.Usagef("this graph has no %s", what)
		case 1:
			return idx[0], cs.r.Instances(idx[0])[0].(T), nil
		default:
			return -1, zero, control.Usagef("this graph has %d %ss (%s): choose one with -element NAME", len(idx), what, strings.Join(names, ", "))
		}
	}
	for _, j := range idx {
		if cs.graph().Elements[j].Name == name {
			return j, cs.r.Instances(j)[0].(T), nil
		}
	}
	if len(idx) == 0 {
		return -1, zero, control.Usagef("-element %s: this graph has no %s", name, what)
	}
	return -1, zero, control.Usagef("-element %s: no %s of that name (this graph has: %s)", name, what, strings.Join(names, ", "))
}

// parseAddrOrPrefix reads "10.1.2.3" or "10.0.0.0/8".
func parseAddrOrPrefix(s string) (netip.Addr, netip.Prefix, error) {
	if strings.Contains(s, "/") {
		p, err := netip.ParsePrefix(s)
		if err != nil {
			return netip.Addr{}, netip.Prefix{}, control.Usagef("%q: not a prefix (want ADDR/LEN, e.g. 10.0.0.0/8)", s)
		}
		if p.Masked() != p {
			return netip.Addr{}, netip.Prefix{}, control.Usagef("%q: host bits set (did you mean %v?)", s, p.Masked())
		}
		return netip.Addr{}, p, nil
	}
	a, err := netip.ParseAddr(s)
	if err != nil {
		return netip.Addr{}, netip.Prefix{}, control.Usagef("%q: not an address or prefix", s)
	}
	return a, netip.Prefix{}, nil
}

// rateSampler keeps a snapshot every second for the last ten seconds, so
// that show interfaces gives rates over one and ten seconds.
type rateSampler struct {
	r    *pipeline.Router
	mu   sync.Mutex
	ring []*pipeline.Snapshot // oldest first, at most 11
	at   []time.Time
}

func newRateSampler(r *pipeline.Router) *rateSampler {
	s := &rateSampler{r: r}
	s.sample()
	return s
}

func (s *rateSampler) sample() {
	snap := s.r.Snapshot()
	s.mu.Lock()
	s.ring = append(s.ring, snap)
	s.at = append(s.at, time.Now())
	if len(s.ring) > 11 {
		s.ring, s.at = s.ring[1:], s.at[1:]
	}
	s.mu.Unlock()
}

func (s *rateSampler) run(done <-chan struct{}) {
	t := time.NewTicker(time.Second)
	defer t.Stop()
	for {
		select {
		case <-done:
			return
		case <-t.C:
			s.sample()
		}
	}
}

// back returns the sample about d ago (the oldest if younger) and its age.
func (s *rateSampler) back(now time.Time, d time.Duration) (*pipeline.Snapshot, time.Duration) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for i := len(s.ring) - 1; i >= 0; i-- {
		if age := now.Sub(s.at[i]); age >= d || i == 0 {
			return s.ring[i], age
		}
	}
	return nil, 0
}

// closeControl stops the server; errors closing are not worth a failure.
func closeControl(srv *control.Server) {
	if srv != nil {
		srv.Close()
	}
}

// runningControl is what run keeps of the control socket.
type runningControl struct {
	srv   *control.Server
	close func()
}

// runControl starts the control socket of a run: at path (explicit: it
// must work), at the default path (best effort: a warning), or not at all
// ("off").
func runControl(r *pipeline.Router, g *pipeline.Graph, path string, stderr io.Writer) (*runningControl, string, error) {
	rc := &runningControl{close: func() {}}
	if path == "off" {
		return rc, "", nil
	}
	explicit := path != ""
	if !explicit {
		path = control.DefaultPath(g.File)
		if g.File == defaultGraphName {
			path = control.DefaultPath("")
		}
	}
	srv, _, err := startControl(r, path)
	if err != nil {
		if explicit {
			return nil, "", err
		}
		fmt.Fprintf(stderr, "warning: %v (running without it; -control PATH chooses another)\n", err)
		return rc, "", nil
	}
	rc.srv = srv
	// SIGHUP reloads the whole graph file, routes files included (run.go,
	// reload.go), as `forwarder reload` does over this socket.
	rc.close = func() { closeControl(srv) }
	return rc, path, nil
}

// graph is the graph this call works on: the one running when it started.
func (cs *ctlServer) graph() *pipeline.Graph {
	if cs.g != nil {
		return cs.g
	}
	return cs.r.Graph()
}
