package graphfile

import (
	"fmt"
	"reflect"
	"sort"
	"strings"

	"github.com/junction-dataplane/junction/conf"
	"github.com/junction-dataplane/junction/elements"
)

// ilink is a link between resolved elements while loading.
type ilink struct {
	from, to         *elemInfo
	fromPort, toPort int
	line             int
}

// resolveLinks parses every link string and resolves its endpoints to
// elements, creating inline-declared and anonymous elements.
func (l *loader) resolveLinks() []*ilink {
	// Pass 1: parse, and collect the inline declarations of every link, so
	// that a link may use a name declared by a later one.
	for _, ls := range l.links {
		chain, err := parseLink(ls.text)
		if err != nil {
			l.errorf(ls.line, "", "", "link %s: %v", quoteLink(ls.text), err)
			l.linkErrors = true
			continue
		}
		ls.chain = chain
		for i, ep := range chain {
			if !ep.Decl {
				continue
			}
			if prev, ok := l.elems[ep.Name]; ok {
				l.add(&ConfigError{Pos: l.at(ls.line), Element: ep.Name,
					Msg: fmt.Sprintf("declared twice: in [elements] at line %d and here", prev.Pos.Line)})
				continue
			}
			if prev, ok := l.inline[ep.Name]; ok {
				l.add(&ConfigError{Pos: l.at(ls.line), Element: ep.Name,
					Msg: fmt.Sprintf("declared twice: first at line %d", prev.line)})
				continue
			}
			l.inline[ep.Name] = &linkDecl{ep: chain[i], line: ls.line, src: ls, idx: i}
		}
	}
	// Pass 2: create elements in link order; references to names wait for
	// pass 3, since their declaration may come later.
	var pending [][2]int // (link, endpoint) of references
	for li, ls := range l.links {
		if ls.chain == nil {
			continue
		}
		ls.ends = make([]*elemInfo, len(ls.chain))
		for i, ep := range ls.chain {
			switch {
			case ep.Decl:
				if d := l.inline[ep.Name]; d != nil && d.src == ls && d.idx == i {
					ls.ends[i] = l.inlineElement(ep.Name, ep.Type, ep, ls.line, false)
				} else {
					// A duplicate, already reported: a placeholder keeps
					// it from also "connecting an output twice".
					ls.ends[i] = l.placeholder(ep.Name)
					l.linkErrors = true
				}
			case l.isDeclared(ep.Name) && !ep.HasArgs:
				pending = append(pending, [2]int{li, i})
			case l.isDeclared(ep.Name):
				pending = append(pending, [2]int{li, i})
				l.errorf(ls.line, "", "", "%q is an element, not a type: arguments follow a type (to declare one, write name :: Type(args))", ep.Name)
			default:
				if _, ok := elements.Lookup(ep.Name); ok || ep.HasArgs {
					ls.ends[i] = l.inlineElement("", ep.Name, ep, ls.line, true)
					break
				}
				ls.ends[i] = l.placeholder(ep.Name)
				// It may be a misspelt element: its links are missing, so
				// connectivity checks would only repeat this error.
				l.linkErrors = true
				cands := append(l.elementNames(), elements.Names()...)
				s := suggest(ep.Name, cands)
				if s == "" {
					s = elements.SuggestType(ep.Name)
				}
				l.errorf(ls.line, "", s, "unknown element or type %q", ep.Name)
			}
		}
	}
	// Pass 3: references.
	for _, p := range pending {
		ls := l.links[p[0]]
		ei := l.elems[ls.chain[p[1]].Name]
		if ei == nil { // cannot happen: every declared name has an element by now
			ei = l.placeholder(ls.chain[p[1]].Name)
		}
		ei.used = true
		ls.ends[p[1]] = ei
	}
	var links []*ilink
	for _, ls := range l.links {
		for i := 0; i+1 < len(ls.ends); i++ {
			links = append(links, &ilink{
				from: ls.ends[i], fromPort: max(ls.chain[i].OutPort, 0),
				to: ls.ends[i+1], toPort: max(ls.chain[i+1].InPort, 0),
				line: ls.line,
			})
		}
	}
	return links
}

func quoteLink(s string) string {
	if len(s) > 60 {
		s = s[:60] + "..."
	}
	return fmt.Sprintf("%q", s)
}

func (l *loader) isDeclared(name string) bool {
	if _, ok := l.elems[name]; ok {
		return true
	}
	_, ok := l.inline[name]
	return ok
}

// elementNames lists the declared element names (for suggestions): those
// created so far in order, then the inline ones still to come, sorted.
func (l *loader) elementNames() []string {
	var out, later []string
	for _, ei := range l.order {
		if !ei.Anonymous {
			out = append(out, ei.Name)
		}
	}
	for name := range l.inline {
		if _, ok := l.elems[name]; !ok {
			later = append(later, name)
		}
	}
	sort.Strings(later)
	return append(out, later...)
}

// placeholder stands for an endpoint that could not be resolved, so that
// its neighbours do not also report unconnected ports.
func (l *loader) placeholder(name string) *elemInfo {
	return &elemInfo{Element: &Element{Name: name}, bad: true, used: true}
}

// inlineElement creates an element declared in a link: named (name ::
// Type(args)) or anonymous (Type(args), bare Type).
func (l *loader) inlineElement(name, typ string, ep endpoint, line int, anon bool) *elemInfo {
	ei := &elemInfo{
		Element: &Element{Name: name, Anonymous: anon, Pos: l.at(line)},
		used:    true,
		given:   map[string]bool{},
	}
	ei.line = func(string) int { return line }
	t, ok := elements.Lookup(typ)
	if anon {
		l.anonCount[typ]++
		ei.Name = fmt.Sprintf("%s@%d", typ, l.anonCount[typ])
	}
	if !anon {
		l.elems[name] = ei
	}
	l.order = append(l.order, ei)
	if !ok {
		ei.bad = true
		e := &ConfigError{Pos: l.at(line), Msg: fmt.Sprintf("unknown element type %q", typ), Suggest: elements.SuggestType(typ)}
		if !anon {
			e.Element = name
		}
		l.add(e)
		return ei
	}
	ei.Type = t
	l.decodeArgs(ei, ep.Args, line)
	if anon {
		// An anonymous element that names one device says which in its
		// name: "ToDevice(wan)@3" in tables, stats and messages.
		if refs := deviceRefs(ei.Element); len(refs) == 1 {
			ei.Name = fmt.Sprintf("%s(%s)@%d", typ, refs[0].dev, l.anonCount[typ])
		}
	}
	return ei
}

// validate checks the graph as a whole: ports, connections, cycles,
// devices and sources.
func (l *loader) validate(links []*ilink) {
	switch {
	case !l.graphSeen:
		l.errorf(1, "", "", "no [graph] table: a graph file needs [graph] links = [...]")
	case l.linksLine == 0 && !l.linksMisspelt:
		l.errorf(l.graphLine, "graph.links", "", "required: the links of the graph")
	case l.linksLine == 0:
		// A misspelt links key, already reported.
	case len(l.links) == 0 && !l.linkErrors:
		l.errorf(l.linksLine, "graph.links", "", "empty: a graph needs at least one link")
	}

	anyBad := false
	for _, ei := range l.order {
		anyBad = anyBad || ei.bad
	}
	for _, lk := range links {
		anyBad = anyBad || lk.from.bad || lk.to.bad
	}

	// A type a graph may hold once (Conntrack): the second is refused
	// here, by check too, rather than by New when run builds it.
	firstOf := map[*elements.Type]*elemInfo{}
	for _, ei := range l.order {
		if ei.Type == nil || ei.Type.OnePerGraph == "" || ei.bad {
			continue
		}
		if first, ok := firstOf[ei.Type]; ok {
			l.elemErr(ei, ei.Pos.Line, "", "", "%s: only one %s per graph (the first is %q, line %d)", ei.Type.OnePerGraph, ei.Type.Name, first.Name, first.Pos.Line)
			ei.bad = true
			continue
		}
		firstOf[ei.Type] = ei
	}

	// An element whose outputs are not known yet (a Plugin not started)
	// has those its links use.
	for _, ei := range l.order {
		if lo, ok := ei.Config.(elements.LinkedOutputs); ok && !ei.bad && lo.OutputsFromLinks() {
			n := 1
			for _, lk := range links {
				if lk.from == ei {
					n = max(n, lk.fromPort+1)
				}
			}
			ei.Out = min(n, maxPort)
		}
	}

	type portKey struct {
		e    *elemInfo
		port int
	}
	outUsed := map[portKey]int{}
	inUsed := map[*elemInfo]bool{}
	// An element with a bad port in some link is not also reported for
	// what that link failed to connect.
	portErr := map[*elemInfo]bool{}
	for _, lk := range links {
		a, b := lk.from, lk.to
		switch {
		case a.bad:
		case a.Out == 0:
			portErr[a] = true
			l.elemErr(a, lk.line, "", "", "has no outputs: it cannot link to %q", b.Name)
		case lk.fromPort >= a.Out:
			portErr[a] = true
			l.elemErr(a, lk.line, "", "", "output [%d] out of range: it has %s", lk.fromPort, plural(a.Out, "output"))
		default:
			k := portKey{a, lk.fromPort}
			if first, dup := outUsed[k]; dup {
				l.elemErr(a, lk.line, "", "", "output [%d] is connected twice (first at line %d): an output feeds one input; copy packets with a Tee", lk.fromPort, first)
			} else {
				outUsed[k] = lk.line
			}
		}
		switch {
		case b.bad:
		case b.In == 0:
			portErr[b] = true
			l.elemErr(b, lk.line, "", "", "has no inputs: %q cannot link to it", a.Name)
		case lk.toPort >= b.In:
			portErr[b] = true
			l.elemErr(b, lk.line, "", "", "input [%d] out of range: it has %s", lk.toPort, plural(b.In, "input"))
		default:
			inUsed[b] = true
		}
	}

	hasSource := false
	for _, ei := range l.order {
		hasSource = hasSource || ei.Type != nil && ei.Type.Source
	}
	if !l.linkErrors && len(l.links) > 0 {
		for _, ei := range l.order {
			if ei.bad || portErr[ei] {
				continue
			}
			if ei.declared && !ei.used {
				l.elemErr(ei, ei.Pos.Line, "", "", "declared but not used in [graph] links")
				continue
			}
			var open []string
			for p := 0; p < ei.Out; p++ {
				if _, ok := outUsed[portKey{ei, p}]; !ok && !ei.Type.IsOptional(p) {
					open = append(open, fmt.Sprintf("[%d]", p))
				}
			}
			switch len(open) {
			case 0:
			case 1:
				l.elemErr(ei, ei.Pos.Line, "", "", "output %s is not connected (send what you do not want to a Discard)", open[0])
			default:
				l.elemErr(ei, ei.Pos.Line, "", "", "outputs %s are not connected (send what you do not want to a Discard)", strings.Join(open, ", "))
			}
			// Without any source nothing has input: say that once, below.
			if ei.In > 0 && !inUsed[ei] && hasSource {
				l.elemErr(ei, ei.Pos.Line, "", "", "no input is connected")
			}
		}
	}

	l.cycles(links)
	l.checkDevices(anyBad)

	if !anyBad && !l.linkErrors && len(l.links) > 0 {
		if !hasSource {
			var srcs []string
			for _, n := range elements.Names() {
				if t, ok := elements.Lookup(n); ok && t.Source {
					srcs = append(srcs, n)
				}
			}
			l.errorf(l.linksLine, "graph.links", "", "no source element: nothing brings packets into the graph (source types: %s)", strings.Join(srcs, ", "))
		}
	}

	if len(l.errs) == 0 {
		for _, ei := range l.order {
			l.g.Elements = append(l.g.Elements, ei.Element)
		}
		for _, lk := range links {
			l.g.Links = append(l.g.Links, Link{From: lk.from.Name, FromPort: lk.fromPort, To: lk.to.Name, ToPort: lk.toPort, Pos: l.at(lk.line)})
		}
	}
}

func plural(n int, what string) string {
	if n == 1 {
		return "1 " + what
	}
	return fmt.Sprintf("%d %ss", n, what)
}

// checkDevices checks that every "device" key names a declared device and
// that every device is used by some element.
func (l *loader) checkDevices(anyBad bool) {
	used := map[string]bool{}
	var names []string
	for _, d := range l.g.Devices {
		names = append(names, d.Name)
	}
	for _, ei := range l.order {
		if ei.bad {
			continue
		}
		for _, ref := range deviceRefs(ei.Element) {
			if l.g.Device(ref.dev) != nil {
				used[ref.dev] = true
				continue
			}
			line := ei.Pos.Line
			if ei.declared && ei.given[ref.key] {
				line = ei.line(ref.key)
			}
			have := "no devices are declared"
			if len(names) > 0 {
				have = "devices: " + strings.Join(names, ", ")
			}
			l.elemErr(ei, line, ref.key, suggest(ref.dev, names), "no device %q (%s)", ref.dev, have)
		}
	}
	if anyBad || l.linkErrors || len(l.links) == 0 {
		return // a broken or missing element may be the one that names the device
	}
	for _, d := range l.g.Devices {
		if !used[d.Name] && !l.badDevices[d.Name] {
			l.devErr(d, d.Pos.Line, "", "", "not used by any element")
		}
	}
}

type deviceRef struct{ key, dev string }

// DeviceNames returns the devices e's keys of type "device" name.
func DeviceNames(e *Element) []string {
	var names []string
	for _, r := range deviceRefs(e) {
		names = append(names, r.dev)
	}
	return names
}

// deviceRefs returns the device names in e's keys of type "device".
func deviceRefs(e *Element) []deviceRef {
	if e.Type == nil || e.Config == nil {
		return nil
	}
	rv := reflect.ValueOf(e.Config)
	if rv.Kind() != reflect.Pointer || rv.IsNil() || rv.Elem().Kind() != reflect.Struct {
		return nil
	}
	rv = rv.Elem()
	fields := conf.Fields(rv.Type())
	var out []deviceRef
	for _, k := range e.Type.Doc.Keys {
		if k.Type != "device" {
			continue
		}
		f, ok := conf.FindField(fields, k.Name)
		if !ok {
			continue
		}
		switch v := conf.FieldValue(rv, f); {
		case v.Kind() == reflect.String:
			if v.String() != "" {
				out = append(out, deviceRef{k.Name, v.String()})
			}
		case v.Kind() == reflect.Slice && v.Type().Elem().Kind() == reflect.String:
			for i := 0; i < v.Len(); i++ {
				if s := v.Index(i).String(); s != "" {
					out = append(out, deviceRef{k.Name, s})
				}
			}
		}
	}
	return out
}

// cycles reports every cycle of the graph. No element breaks a cycle yet
// (a queue would), so each one is an error naming its elements.
func (l *loader) cycles(links []*ilink) {
	adj := map[*elemInfo][]*ilink{}
	var nodes []*elemInfo
	seen := map[*elemInfo]bool{}
	addNode := func(e *elemInfo) {
		if !seen[e] {
			seen[e] = true
			nodes = append(nodes, e)
		}
	}
	for _, lk := range links {
		addNode(lk.from)
		addNode(lk.to)
		adj[lk.from] = append(adj[lk.from], lk)
	}
	// Tarjan's strongly connected components, iteratively: a graph file
	// may hold long chains.
	index := map[*elemInfo]int{}
	low := map[*elemInfo]int{}
	onStack := map[*elemInfo]bool{}
	var stack []*elemInfo
	next := 0
	type frame struct {
		v *elemInfo
		i int
	}
	var sccs [][]*elemInfo
	for _, root := range nodes {
		if _, done := index[root]; done {
			continue
		}
		call := []frame{{v: root}}
		index[root], low[root] = next, next
		next++
		stack = append(stack, root)
		onStack[root] = true
		for len(call) > 0 {
			f := &call[len(call)-1]
			if f.i < len(adj[f.v]) {
				w := adj[f.v][f.i].to
				f.i++
				if _, ok := index[w]; !ok {
					index[w], low[w] = next, next
					next++
					stack = append(stack, w)
					onStack[w] = true
					call = append(call, frame{v: w})
				} else if onStack[w] {
					low[f.v] = min(low[f.v], index[w])
				}
				continue
			}
			v := f.v
			call = call[:len(call)-1]
			if len(call) > 0 {
				p := call[len(call)-1].v
				low[p] = min(low[p], low[v])
			}
			if low[v] == index[v] {
				var scc []*elemInfo
				for {
					w := stack[len(stack)-1]
					stack = stack[:len(stack)-1]
					onStack[w] = false
					scc = append(scc, w)
					if w == v {
						break
					}
				}
				sccs = append(sccs, scc)
			}
		}
	}
	order := map[*elemInfo]int{}
	for i, n := range nodes {
		order[n] = i
	}
	for _, scc := range sccs {
		in := map[*elemInfo]bool{}
		for _, e := range scc {
			in[e] = true
		}
		sort.Slice(scc, func(i, j int) bool { return order[scc[i]] < order[scc[j]] })
		start := scc[0]
		path := shortestCycle(start, adj, in)
		if path == nil {
			continue // a single element without a link to itself
		}
		names := []string{start.Name}
		line := path[0].line
		for _, lk := range path {
			names = append(names, lk.to.Name)
			line = min(line, lk.line)
		}
		l.add(&ConfigError{Pos: l.at(line), Msg: fmt.Sprintf("cycle: %s (packets would loop forever; no element breaks a cycle)", strings.Join(names, " -> "))})
	}
}

// shortestCycle returns the links of a shortest cycle through start within
// the component in, or nil.
func shortestCycle(start *elemInfo, adj map[*elemInfo][]*ilink, in map[*elemInfo]bool) []*ilink {
	via := map[*elemInfo]*ilink{}
	queue := []*elemInfo{start}
	for len(queue) > 0 {
		v := queue[0]
		queue = queue[1:]
		for _, lk := range adj[v] {
			w := lk.to
			if !in[w] {
				continue
			}
			if w == start {
				path := []*ilink{lk}
				for x := v; x != start; x = via[x].from {
					path = append(path, via[x])
				}
				for i, j := 0, len(path)-1; i < j; i, j = i+1, j-1 {
					path[i], path[j] = path[j], path[i]
				}
				return path
			}
			if _, ok := via[w]; !ok {
				via[w] = lk
				queue = append(queue, w)
			}
		}
	}
	return nil
}

// Device is the one device an element names (FromDevice's and
// ToDevice's device key), or "" when it names none or several.
func (e *Element) Device() string {
	if refs := deviceRefs(e); len(refs) == 1 {
		return refs[0].dev
	}
	return ""
}
