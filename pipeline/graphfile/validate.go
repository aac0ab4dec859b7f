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
	// toLine is the line of the link into to: line, or for a link
	// through compound ports the last link's.
	toLine int
}

// scopeOf returns the scope a link's names are resolved in.
func (l *loader) scopeOf(ls *linkSrc) *scope {
	if ls.sc == nil {
		return l.top
	}
	return ls.sc
}

// linkErr reports a problem with a link, at its line and within the
// compound instances it lies in.
func (l *loader) linkErr(ls *linkSrc, suggest, format string, args ...any) {
	e := &ConfigError{Pos: l.at(ls.line), Msg: fmt.Sprintf(format, args...), Suggest: suggest}
	if ls.sc != nil && ls.sc.inst != nil {
		e.Within = ls.sc.inst.within()
	}
	l.add(e)
}

// resolveLinks parses every link string and resolves its endpoints to
// elements, creating inline-declared and anonymous elements and
// flattening compound instances, whose links join l.links as they are
// made and are resolved in a later round.
func (l *loader) resolveLinks() []*ilink {
	var pending [][2]int // (link, endpoint) of references
	for done := 0; done < len(l.links); {
		// Pass 1: parse, and collect the inline declarations of every
		// link, so that a link may use a name declared by a later one.
		for li := done; li < len(l.links); li++ {
			l.inlineDecls(l.links[li])
		}
		// Pass 2: create elements in link order; references to names
		// wait for pass 3, since their declaration may come later.
		end := len(l.links)
		for li := done; li < end; li++ {
			l.resolveEnds(li, &pending)
		}
		done = end
	}
	// Pass 3: references.
	for _, p := range pending {
		ls := l.links[p[0]]
		ei := l.lookup(l.scopeOf(ls).full(ls.chain[p[1]]))
		if ei == nil { // cannot happen: every declared name has an element by now
			ei = l.placeholder(ls.chain[p[1]].Name)
		}
		ei.used = true
		ls.ends[p[1]] = ei
	}
	var links []*ilink
	for _, ls := range l.links {
		for i := 0; i+1 < len(ls.ends); i++ {
			from, to := ls.chain[i], ls.chain[i+1]
			fp, ok1 := l.portIndex(ls, ls.ends[i], max(from.OutPort, 0), from.OutName, true)
			tp, ok2 := l.portIndex(ls, ls.ends[i+1], max(to.InPort, 0), to.InName, false)
			if !ok1 || !ok2 {
				l.linkErrors = true
				continue
			}
			links = append(links, &ilink{from: ls.ends[i], fromPort: fp, to: ls.ends[i+1], toPort: tp, line: ls.line, toLine: ls.line})
		}
	}
	return l.splice(links)
}

// lookup returns the element or compound instance of this full name.
func (l *loader) lookup(full string) *elemInfo {
	if ei := l.elems[full]; ei != nil {
		return ei
	}
	if inst := l.insts[full]; inst != nil {
		return inst.outer
	}
	return nil
}

// inlineDecls parses ls and records its inline declarations (pass 1);
// an inline compound instance is made at once.
func (l *loader) inlineDecls(ls *linkSrc) {
	sc := l.scopeOf(ls)
	chain, err := parseLink(ls.text)
	if err != nil {
		l.linkErr(ls, "", "link %s: %v", quoteLink(ls.text), err)
		l.linkErrors = true
		return
	}
	ls.chain = chain
	for i, ep := range chain {
		if !ep.Decl {
			continue
		}
		full := sc.prefix + ep.Name
		if sc.inst != nil && (ep.Name == "input" || ep.Name == "output") {
			l.linkErr(ls, "", "%s is the compound's own ports, not an element to declare", ep.Name)
			continue
		}
		if prev := l.elems[full]; prev != nil {
			l.linkErr(ls, "", "element %s: declared twice: in [elements] at line %d and here", quoteValue(full), prev.Pos.Line)
			continue
		}
		if prev := l.insts[full]; prev != nil {
			l.linkErr(ls, "", "element %s: declared twice: first at line %d", quoteValue(full), prev.line)
			continue
		}
		if prev, ok := l.inline[full]; ok {
			l.linkErr(ls, "", "element %s: declared twice: first at line %d", quoteValue(full), prev.line)
			continue
		}
		d := &linkDecl{ep: chain[i], line: ls.line, src: ls, idx: i}
		l.inline[full] = d
		if c := l.compounds[ep.Type]; c != nil {
			d.node = l.instantiate(sc, full, c, l.positional(sc, ls, full, c, ep.Args), func(string) int { return ls.line }, ls.line)
		}
	}
}

// positional maps a compound's inline arguments to its params, in order.
func (l *loader) positional(sc *scope, ls *linkSrc, name string, c *compound, args []string) map[string]any {
	m := make(map[string]any, len(args))
	for i, a := range args {
		if i >= len(c.params) {
			l.useErr(sc, name, "compound "+c.name, ls.line, "", "", "too many arguments: %s takes %d (%s), got %d", c.name, len(c.params), paramList(c), len(args))
			break
		}
		m[c.params[i]] = inlineArg(a)
	}
	return m
}

// resolveEnds creates the elements of link li's endpoints (pass 2).
func (l *loader) resolveEnds(li int, pending *[][2]int) {
	ls := l.links[li]
	if ls.chain == nil {
		return
	}
	sc := l.scopeOf(ls)
	ls.ends = make([]*elemInfo, len(ls.chain))
	for i, ep := range ls.chain {
		full := sc.full(ep)
		switch {
		case ep.Abs && !l.isDeclared(full):
			ls.ends[i] = l.placeholder(full)
			l.linkErrors = true
			l.linkErr(ls, suggest(ep.Name, l.elementNames(l.top)), "no element %q at the top of the file for /%s", ep.Name, ep.Name)
		case ep.Abs:
			*pending = append(*pending, [2]int{li, i})
		case sc.inst != nil && (ep.Name == "input" || ep.Name == "output"):
			if ep.Decl {
				ls.ends[i] = l.placeholder(full) // reported in pass 1
				l.linkErrors = true
				break
			}
			if ep.HasArgs {
				l.linkErr(ls, "", "%s is the compound's own ports: it takes no arguments", ep.Name)
			}
			ls.ends[i] = sc.inst.input
			if ep.Name == "output" {
				ls.ends[i] = sc.inst.output
			}
		case ep.Decl:
			d := l.inline[full]
			switch {
			case d == nil || d.src != ls || d.idx != i:
				// A duplicate, already reported: a placeholder keeps
				// it from also "connecting an output twice".
				ls.ends[i] = l.placeholder(full)
				l.linkErrors = true
			case d.node != nil:
				ls.ends[i] = d.node
			default:
				ls.ends[i] = l.inlineElement(sc, full, ep.Type, ep, ls.line, false)
			}
		case l.isDeclared(full) && !ep.HasArgs:
			*pending = append(*pending, [2]int{li, i})
		case l.isDeclared(full):
			*pending = append(*pending, [2]int{li, i})
			l.linkErr(ls, "", "%q is an element, not a type: arguments follow a type (to declare one, write name :: Type(args))", ep.Name)
		case l.compounds[ep.Name] != nil:
			c := l.compounds[ep.Name]
			sc.anonCount[ep.Name]++
			name := fmt.Sprintf("%s%s@%d", sc.prefix, ep.Name, sc.anonCount[ep.Name])
			ls.ends[i] = l.instantiate(sc, name, c, l.positional(sc, ls, name, c, ep.Args), func(string) int { return ls.line }, ls.line)
		default:
			if _, ok := elements.Lookup(ep.Name); ok || ep.HasArgs {
				ls.ends[i] = l.inlineElement(sc, "", ep.Name, ep, ls.line, true)
				break
			}
			ls.ends[i] = l.placeholder(full)
			// It may be a misspelt element: its links are missing, so
			// connectivity checks would only repeat this error.
			l.linkErrors = true
			cands := append(l.elementNames(sc), elements.Names()...)
			s := suggest(ep.Name, cands)
			if s == "" {
				s = l.suggestType(ep.Name)
			}
			l.linkErr(ls, s, "unknown element or type %q", ep.Name)
		}
	}
}

func quoteLink(s string) string {
	if len(s) > 60 {
		s = s[:60] + "..."
	}
	return fmt.Sprintf("%q", s)
}

func (l *loader) isDeclared(full string) bool {
	if _, ok := l.elems[full]; ok {
		return true
	}
	if _, ok := l.insts[full]; ok {
		return true
	}
	_, ok := l.inline[full]
	return ok
}

// suggestType returns the element type or compound nearest to typ.
func (l *loader) suggestType(typ string) string {
	names := make([]string, 0, len(l.compounds))
	for n := range l.compounds {
		names = append(names, n)
	}
	sort.Strings(names)
	if s := suggest(typ, names); s != "" {
		return s
	}
	return elements.SuggestType(typ)
}

// elementNames lists the names declared in scope sc (for suggestions):
// those created so far in order, then the inline ones still to come and
// the compound instances, sorted.
func (l *loader) elementNames(sc *scope) []string {
	var out, later []string
	for _, ei := range l.order {
		if !ei.Anonymous && ei.inst == sc.inst {
			out = append(out, strings.TrimPrefix(ei.Name, sc.prefix))
		}
	}
	inScope := func(full string) (string, bool) {
		rest, ok := strings.CutPrefix(full, sc.prefix)
		return rest, ok && !strings.Contains(rest, "/")
	}
	for full := range l.inline {
		if name, ok := inScope(full); ok && l.elems[full] == nil {
			later = append(later, name)
		}
	}
	for full := range l.insts {
		if name, ok := inScope(full); ok && l.inline[full] == nil {
			later = append(later, name)
		}
	}
	if sc.inst != nil {
		later = append(later, "input", "output")
	}
	sort.Strings(later)
	return append(out, later...)
}

// placeholder stands for an endpoint that could not be resolved, so that
// its neighbours do not also report unconnected ports.
func (l *loader) placeholder(name string) *elemInfo {
	return &elemInfo{Element: &Element{Name: name}, bad: true, used: true}
}

// inlineElement creates an element declared in a link in scope sc: named
// (full name :: Type(args)) or anonymous (Type(args), bare Type).
func (l *loader) inlineElement(sc *scope, name, typ string, ep endpoint, line int, anon bool) *elemInfo {
	ei := &elemInfo{
		Element: &Element{Name: name, Anonymous: anon, Pos: l.at(line), Instance: sc.instName()},
		used:    true,
		given:   map[string]bool{},
		inst:    sc.inst,
	}
	ei.line = func(string) int { return line }
	t, ok := elements.Lookup(typ)
	if anon {
		sc.anonCount[typ]++
		ei.Name = fmt.Sprintf("%s%s@%d", sc.prefix, typ, sc.anonCount[typ])
	}
	if !anon {
		l.elems[name] = ei
	}
	l.order = append(l.order, ei)
	if !ok {
		ei.bad = true
		e := &ConfigError{Pos: l.at(line), Msg: fmt.Sprintf("unknown element type %q", typ), Suggest: l.suggestType(typ)}
		if !anon {
			e.Element = name
		}
		if sc.inst != nil {
			e.Within = sc.inst.within()
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
			ei.Name = fmt.Sprintf("%s%s(%s)@%d", sc.prefix, typ, refs[0].dev, sc.anonCount[typ])
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
	case len(l.links) == 0 && !l.linkErrors && !l.compoundErrors:
		l.errorf(l.linksLine, "graph.links", "", "empty: a graph needs at least one link")
	}

	anyBad := l.compoundErrors
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
			l.elemErr(b, lk.toLine, "", "", "has no inputs: %q cannot link to it", a.Name)
		case lk.toPort >= b.In:
			portErr[b] = true
			l.elemErr(b, lk.toLine, "", "", "input [%d] out of range: it has %s", lk.toPort, plural(b.In, "input"))
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
				where := "[graph] links"
				if ei.inst != nil {
					where = "the compound's links"
				}
				l.elemErr(ei, ei.Pos.Line, "", "", "declared but not used in %s", where)
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
		if lk.from.stub || lk.to.stub {
			continue // what it stands for is unknown: no cycle through it
		}
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
