package graphfile

import (
	"fmt"
	"reflect"
	"sort"
	"strconv"
	"strings"

	"github.com/junction-dataplane/junction/conf"
	"github.com/junction-dataplane/junction/elements"
)

// Compound elements, Click's elementclass. A [compounds.NAME] table defines
// a piece of graph once, with named inputs, outputs and parameters:
//
//	[compounds.side]
//	params  = ["dev"]
//	inputs  = ["in"]
//	outputs = ["ip", "arp"]
//	links   = ["input[in] -> cls :: Classifier(ip, arp, -)", "cls[0] -> [ip]output", ...]
//
//	[compounds.side.elements.q]
//	type   = "ARPQuerier"
//	device = "$dev"
//
// and an element whose type is NAME uses it ([elements.lan] type = "side",
// dev = "lan"; or inline, lan :: side(lan), the arguments in params'
// order). The loader flattens every use into ordinary elements named
// "INSTANCE/INNER" ("lan/cls", nested: "lan/x/cls") and ordinary links
// before the graph is validated, so the runtime never sees a compound and
// pays nothing for one. A parameter is written $NAME or ${NAME} in any
// string of the definition ($$ is a "$"); a string that is only "$NAME"
// takes the value as given (a number, a list).
//
// Inside the definition, "input" and "output" stand for the compound's
// ports: input[in] -> x sends what enters input "in" to x, x -> [ip]output
// leaves by output "ip". Outside, the instance's ports are named or
// numbered in their list's order: lan[arp], [in]lan, lan[1]. A compound
// that is one device's side of a graph around shared elements (a route
// lookup, a connection tracker) may instead name those directly: /rt is
// the element rt of the file's top level, wherever the compound is used.

// Keys of a [compounds.NAME] table.
var compoundKeys = []string{"params", "inputs", "outputs", "elements", "links"}

// maxCompoundDepth bounds nesting: a chain this deep is a mistake, and
// flattening is exponential in it.
const maxCompoundDepth = 16

// MaxFlatElements bounds the elements and compound uses of the flattened
// graph, MaxFlatLinks its link strings: compounds multiply what the file
// holds, and a few nested ones would otherwise make a small file into
// millions of elements.
const (
	MaxFlatElements = 1 << 16
	MaxFlatLinks    = 1 << 18
)

// compound is one [compounds.NAME] definition.
type compound struct {
	name            string
	line            int
	params          []string
	inputs, outputs []string
	elems           map[string]any // [compounds.NAME.elements]
	links           []*linkSrc     // templates: text before substitution
	bad             bool           // broken definition: uses are placeholders
	reported        map[string]bool
}

// instance is one use of a compound.
type instance struct {
	name   string // full name: "lan", nested "lan/x"
	comp   *compound
	line   int
	parent *scope
	args   map[string]any
	sc     *scope // the instance's own scope
	// outer stands for the instance in its parent's links; input and
	// output are the pseudo-elements of its definition's links.
	outer, input, output *elemInfo
}

// scope is where names in links are resolved: the top of the file, or one
// instance of a compound.
type scope struct {
	prefix    string    // "" at the top, "lan/" inside instance lan
	inst      *instance // nil at the top
	anonCount map[string]int
}

// virtual kinds of elemInfo.virt's node.
const (
	virtOuter = iota + 1
	virtInput
	virtOutput
)

// within describes where an instance lies, for errors about what is inside
// it: `in compound side, instance lan at line 80`, outermost last.
func (inst *instance) within() string {
	var parts []string
	for in := inst; in != nil; in = in.parent.inst {
		parts = append(parts, fmt.Sprintf("compound %s, instance %s at line %d", in.comp.name, in.name, in.line))
	}
	return strings.Join(parts, "; ")
}

// depth is the number of instances around inst's scope, inst included.
func (inst *instance) depth() int {
	n := 0
	for in := inst; in != nil; in = in.parent.inst {
		n++
	}
	return n
}

// compoundDefs reads the [compounds] table.
func (l *loader) compoundDefs(m map[string]any) {
	for _, name := range l.keysByLine(m, "compounds") {
		line := l.pos.line("compounds", name)
		c := &compound{name: name, line: line, reported: map[string]bool{}}
		l.compounds[name] = c
		cerr := func(line int, key, sug, format string, args ...any) {
			c.bad = true
			l.compoundErrors = true
			l.add(&ConfigError{Pos: l.at(line), Type: "compound " + quoteValue(name), Key: key, Msg: fmt.Sprintf(format, args...), Suggest: sug})
		}
		if !validName(name) {
			cerr(line, "", "", "bad compound name: its elements are written name :: %s, so it needs a letter or '_' then letters, digits, '_' or '-'", name)
			continue
		}
		if _, ok := elements.Lookup(name); ok {
			cerr(line, "", "", "an element type has this name: a compound needs a name of its own")
			continue
		}
		tbl, ok := m[name].(map[string]any)
		if !ok {
			cerr(line, "", "", "want a table [compounds.%s], got %s", name, conf.TypeName(m[name]))
			continue
		}
		for _, k := range l.keysByLine(tbl, "compounds", name) {
			kline := l.pos.line("compounds", name, k)
			v := tbl[k]
			switch k {
			case "params", "inputs", "outputs":
				list, ok := l.nameList(v, kline, func(i int) int { return l.pos.item(i, "compounds", name, k) }, cerr, k)
				if !ok {
					continue
				}
				switch k {
				case "params":
					c.params = list
				case "inputs":
					c.inputs = list
				case "outputs":
					c.outputs = list
				}
			case "elements":
				et, ok := v.(map[string]any)
				if !ok {
					cerr(kline, k, "", "want tables [compounds.%s.elements.NAME], got %s", name, conf.TypeName(v))
					continue
				}
				c.elems = et
				for _, en := range sortedKeys(et) {
					if en == "input" || en == "output" {
						cerr(l.pos.line("compounds", name, "elements", en), "", "", "element %q: input and output are the compound's own ports, not element names", en)
					}
				}
			case "links":
				items, ok := v.([]any)
				if !ok {
					cerr(kline, k, "", "want an array of strings, got %s", conf.TypeName(v))
					continue
				}
				for i, it := range items {
					iline := l.pos.item(i, "compounds", name, k)
					s, ok := it.(string)
					if !ok {
						cerr(iline, k, "", "item %d: want a link string, got %s", i+1, conf.TypeName(it))
						continue
					}
					c.links = append(c.links, &linkSrc{text: s, line: iline})
				}
			default:
				cerr(kline, k, suggest(k, compoundKeys), "unknown (keys: %s)", strings.Join(compoundKeys, ", "))
			}
		}
		if len(c.links) == 0 && !c.bad {
			cerr(line, "links", "", "required: the links of the compound (input[PORT] -> ... -> [PORT]output)")
		}
		l.checkParams(c)
	}
}

// nameList decodes params, inputs or outputs: distinct names.
func (l *loader) nameList(v any, line int, itemLine func(int) int, cerr func(int, string, string, string, ...any), key string) ([]string, bool) {
	var list []string
	if err := conf.SetValue(reflect.ValueOf(&list).Elem(), v); err != nil {
		cerr(line, key, "", "%v", err)
		return nil, false
	}
	seen := map[string]bool{}
	ok := true
	for i, s := range list {
		switch {
		case !validName(s) || strings.Contains(s, "-"):
			cerr(itemLine(i), key, "", "bad name %s: a letter or '_' then letters, digits or '_'", quoteValue(s))
			ok = false
		case seen[s]:
			cerr(itemLine(i), key, "", "%s named twice", quoteValue(s))
			ok = false
		}
		seen[s] = true
	}
	return list, ok
}

// checkParams reports every $NAME of c's definition that is not one of
// its params, and every param it never uses: a Click elementclass user
// expects both to be caught once, where the definition is.
func (l *loader) checkParams(c *compound) {
	used := map[string]bool{}
	bad := func(line int, key, format string, args ...any) {
		c.bad = true
		l.compoundErrors = true
		l.add(&ConfigError{Pos: l.at(line), Type: "compound " + quoteValue(c.name), Key: key, Msg: fmt.Sprintf(format, args...)})
	}
	check := func(s string, line int) {
		refs, err := paramRefs(s)
		if err != nil {
			bad(line, "", "%s: %v", quoteValue(s), err)
			return
		}
		for _, r := range refs {
			if !contains(c.params, r) {
				have := "it has none: declare params = [...]"
				if len(c.params) > 0 {
					have = "params: " + strings.Join(c.params, ", ")
				}
				c.bad = true
				l.compoundErrors = true
				l.add(&ConfigError{Pos: l.at(line), Type: "compound " + quoteValue(c.name), Msg: fmt.Sprintf("$%s is not a parameter (%s)", r, have), Suggest: suggest(r, c.params)})
				continue
			}
			used[r] = true
		}
	}
	for _, ls := range c.links {
		check(ls.text, ls.line)
	}
	for _, en := range sortedKeys(c.elems) {
		walkStrings(c.elems[en], []string{"compounds", c.name, "elements", en}, func(s string, path []string) {
			check(s, l.pos.line(path...))
		})
	}
	for i, p := range c.params {
		if !used[p] {
			bad(l.pos.item(i, "compounds", c.name, "params"), "params", "parameter %q is not used: write $%s in a key or link of the compound, or remove it", p, p)
		}
	}
}

// walkStrings calls f for every string in v (a decoded TOML value), with
// its key path (array items add their index).
func walkStrings(v any, path []string, f func(s string, path []string)) {
	switch v := v.(type) {
	case string:
		f(v, path)
	case []any:
		for i, x := range v {
			walkStrings(x, append(append([]string(nil), path...), strconv.Itoa(i)), f)
		}
	case []map[string]any:
		for i, x := range v {
			walkStrings(x, append(append([]string(nil), path...), strconv.Itoa(i)), f)
		}
	case map[string]any:
		for _, k := range sortedKeys(v) {
			walkStrings(v[k], append(append([]string(nil), path...), k), f)
		}
	}
}

// paramRefs returns the parameters s refers to: $NAME, ${NAME}; $$ is a
// literal "$".
func paramRefs(s string) ([]string, error) {
	var refs []string
	_, err := expand(s, func(name string) string {
		refs = append(refs, name)
		return ""
	})
	return refs, err
}

// expand replaces every $NAME and ${NAME} in s by value(NAME), $$ by "$".
func expand(s string, value func(string) string) (string, error) {
	if !strings.Contains(s, "$") {
		return s, nil
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] != '$' {
			b.WriteByte(s[i])
			continue
		}
		rest := s[i+1:]
		switch {
		case strings.HasPrefix(rest, "$"):
			b.WriteByte('$')
			i++
		case strings.HasPrefix(rest, "{"):
			end := strings.IndexByte(rest, '}')
			if end < 0 || !validParam(rest[1:end]) {
				return "", fmt.Errorf("a \"${\" needs a parameter name and \"}\" (write $$ for a \"$\")")
			}
			b.WriteString(value(rest[1:end]))
			i += end + 1
		default:
			n := 0
			for n < len(rest) && isIdentChar(rest[n]) {
				n++
			}
			if n == 0 || !isIdentStart(rest[0]) {
				return "", fmt.Errorf("a \"$\" starts a parameter, $NAME or ${NAME} (write $$ for a \"$\")")
			}
			b.WriteString(value(rest[:n]))
			i += n
		}
	}
	return b.String(), nil
}

func validParam(s string) bool {
	if s == "" || !isIdentStart(s[0]) {
		return false
	}
	for i := 1; i < len(s); i++ {
		if !isIdentChar(s[i]) {
			return false
		}
	}
	return true
}

// onlyParam returns NAME when s is exactly "$NAME" or "${NAME}".
func onlyParam(s string) (string, bool) {
	switch {
	case strings.HasPrefix(s, "${") && strings.HasSuffix(s, "}") && validParam(s[2:len(s)-1]):
		return s[2 : len(s)-1], true
	case strings.HasPrefix(s, "$") && validParam(s[1:]):
		return s[1:], true
	}
	return "", false
}

// argText writes a parameter's value into a string: as written in TOML,
// without quotes for a string, a list's items separated by ", " (so that
// Classifier($rules) takes a list parameter as its arguments).
func argText(v any) string {
	switch v := v.(type) {
	case string:
		return v
	case []any:
		parts := make([]string, len(v))
		for i, x := range v {
			parts[i] = argText(x)
		}
		return strings.Join(parts, ", ")
	case int64:
		return strconv.FormatInt(v, 10)
	case float64:
		return strconv.FormatFloat(v, 'g', -1, 64)
	case bool:
		return strconv.FormatBool(v)
	}
	return fmt.Sprint(v)
}

// substitute returns v with the instance's parameters substituted in every
// string (v is not changed). The definition was checked by checkParams, so
// every reference is a parameter.
func substitute(v any, args map[string]any) any {
	switch v := v.(type) {
	case string:
		if p, ok := onlyParam(v); ok {
			if a, ok := args[p]; ok {
				return a
			}
		}
		s, err := expand(v, func(name string) string { return argText(args[name]) })
		if err != nil {
			return v
		}
		return s
	case []any:
		out := make([]any, len(v))
		for i, x := range v {
			out[i] = substitute(x, args)
		}
		return out
	case []map[string]any:
		out := make([]map[string]any, len(v))
		for i, x := range v {
			out[i] = substitute(x, args).(map[string]any)
		}
		return out
	case map[string]any:
		out := make(map[string]any, len(v))
		for k, x := range v {
			out[k] = substitute(x, args)
		}
		return out
	}
	return v
}

// inlineArg reads an inline argument of a compound (lan :: side(lan,
// 1500)) as a TOML value would be: a number, true or false, a quoted
// string; anything else is the string as written.
func inlineArg(s string) any {
	if n, err := strconv.ParseInt(s, 10, 64); err == nil {
		return n
	}
	if s == "true" || s == "false" {
		return s == "true"
	}
	if len(s) >= 2 && s[0] == '"' && s[len(s)-1] == '"' {
		if u, err := strconv.Unquote(s); err == nil {
			return u
		}
	}
	return s
}

// useErr reports a problem with the use of a compound: at the line
// of the use, within the instances around it.
func (l *loader) useErr(sc *scope, name, comp string, line int, key, sug, format string, args ...any) {
	e := &ConfigError{Pos: l.at(line), Element: name, Type: comp, Key: key, Msg: fmt.Sprintf(format, args...), Suggest: sug}
	if sc.inst != nil {
		e.Within = sc.inst.within()
	}
	l.add(e)
}

// instantiate makes instance name (full) of c in scope parent, declared
// at line: it checks the arguments, declares the inner elements and adds
// the inner links. It returns the node that stands for the instance in
// parent's links (a placeholder when the use is broken, so that its links
// report nothing more).
func (l *loader) instantiate(parent *scope, name string, c *compound, args map[string]any, argLine func(string) int, line int) *elemInfo {
	// Until the use is known good, a placeholder: links to it report
	// nothing more.
	ph := &elemInfo{Element: &Element{Name: name, Pos: l.at(line)}, bad: true, used: true, stub: true}
	inst := &instance{name: name, comp: c, line: line, parent: parent, args: args}
	l.insts[name] = inst
	l.compoundErrors = true
	inst.outer = ph
	typ := "compound " + c.name
	for in := parent.inst; in != nil; in = in.parent.inst {
		if in.comp == c {
			chain := []string{c.name}
			for x := parent.inst; x != nil; x = x.parent.inst {
				chain = append(chain, x.comp.name)
				if x == in {
					break
				}
			}
			for i, j := 0, len(chain)-1; i < j; i, j = i+1, j-1 {
				chain[i], chain[j] = chain[j], chain[i]
			}
			l.useErr(parent, name, typ, line, "", "", "compound %q instantiates itself: %s", c.name, strings.Join(chain, " -> "))
			return ph
		}
	}
	if d := parent.inst.depth(); d >= maxCompoundDepth {
		l.useErr(parent, name, typ, line, "", "", "compounds nested more than %d deep", maxCompoundDepth)
		return ph
	}
	if len(l.order)+len(l.insts) > MaxFlatElements || len(l.links)+len(c.links) > MaxFlatLinks {
		if !l.flatTooBig {
			l.flatTooBig = true
			l.useErr(parent, name, typ, line, "", "", "the flattened graph has more than %d elements and compound uses (MaxFlatElements) or %d links (MaxFlatLinks)", MaxFlatElements, MaxFlatLinks)
		}
		return ph
	}
	bad := c.bad
	for _, k := range sortedKeys(args) {
		if !contains(c.params, k) {
			cands := append([]string{"type"}, c.params...)
			l.useErr(parent, name, typ, argLine(k), k, suggest(k, cands), "unknown (%s)", paramList(c))
			bad = true
		}
	}
	for _, p := range c.params {
		if _, ok := args[p]; !ok {
			l.useErr(parent, name, typ, line, p, "", "required: a parameter of the compound (%s)", paramList(c))
			bad = true
		}
	}
	if bad {
		return ph
	}
	l.compoundErrors = l.compoundErrors && c.bad
	ph.bad, ph.stub, ph.virt, ph.virtKind = false, false, inst, virtOuter
	ph.In, ph.Out = len(c.inputs), len(c.outputs)
	sc := &scope{prefix: name + "/", inst: inst, anonCount: map[string]int{}}
	inst.sc = sc
	inst.input = &elemInfo{Element: &Element{Name: name + "/input", Pos: l.at(line), Out: len(c.inputs)}, virt: inst, virtKind: virtInput, used: true}
	inst.output = &elemInfo{Element: &Element{Name: name + "/output", Pos: l.at(line), In: len(c.outputs)}, virt: inst, virtKind: virtOutput, used: true}
	l.g.Instances = append(l.g.Instances, &Instance{Name: name, Compound: c.name, Parent: parent.instName(), Pos: l.at(line)})
	if c.elems != nil {
		l.declare(sc, substitute(c.elems, args).(map[string]any), "compounds", c.name, "elements")
	}
	for _, t := range c.links {
		text, _ := expand(t.text, func(p string) string { return argText(args[p]) })
		l.links = append(l.links, &linkSrc{text: text, line: t.line, sc: sc})
	}
	return ph
}

// full is the full name endpoint ep names in scope sc: "lan/cls" for cls
// inside lan, "me" for /me.
func (sc *scope) full(ep endpoint) string {
	if ep.Abs {
		return ep.Name
	}
	return sc.prefix + ep.Name
}

// scopePrefix is the prefix of the names of ls's scope.
func (ls *linkSrc) scopePrefix() string {
	if ls.sc == nil {
		return ""
	}
	return ls.sc.prefix
}

func (sc *scope) instName() string {
	if sc.inst == nil {
		return ""
	}
	return sc.inst.name
}

func paramList(c *compound) string {
	if len(c.params) == 0 {
		return "it takes no parameters"
	}
	return "params: " + strings.Join(c.params, ", ")
}

// portIndex resolves a port of a link endpoint: a number as written, a
// name on a compound's ports. ok is false (the error reported) when the
// name is not a port.
func (l *loader) portIndex(ls *linkSrc, ei *elemInfo, n int, name string, out bool) (int, bool) {
	if name == "" || ei.bad {
		return n, true
	}
	if ei.virt == nil {
		l.linkErr(ls, "", "link %s: %q has numbered ports: write [N] ([%s] names a port of a compound element only)", quoteLink(ls.text), strings.TrimPrefix(ei.Name, ls.scopePrefix()), name)
		return 0, false
	}
	c := ei.virt.comp
	names, what := portNames(ei, out)
	if i := indexOf(names, name); i >= 0 {
		return i, true
	}
	have := "none"
	if len(names) > 0 {
		have = strings.Join(names, ", ")
	}
	l.linkErr(ls, suggest(name, names), "link %s: compound %s has no %s %q (%ss: %s)", quoteLink(ls.text), c.name, what, name, what, have)
	return 0, false
}

func indexOf(list []string, s string) int {
	for i, x := range list {
		if x == s {
			return i
		}
	}
	return -1
}

// portName names port p of a compound's inputs or outputs.
func portName(names []string, p int) string {
	if p >= 0 && p < len(names) {
		return "[" + names[p] + "]"
	}
	return "[" + strconv.Itoa(p) + "]"
}

// splice replaces the links to and from compound ports by the links they
// make between ordinary elements: x -> [in]lan and, inside lan,
// input[in] -> cls become x -> lan/cls. It reports compound ports that are
// out of range, connected twice or not connected, inside the definition or
// at the use.
func (l *loader) splice(links []*ilink) []*ilink {
	if len(l.insts) == 0 {
		return links
	}
	type vport struct {
		n    *elemInfo
		port int
	}
	from := map[vport][]*ilink{}
	into := map[vport]int{}
	var out []*ilink
	for _, lk := range links {
		ok := true
		if v := lk.from; v.virt != nil {
			if lk.fromPort >= v.Out {
				l.virtErr(v, lk.line, "has no output %s: it has %s", portText(lk.fromPort, ""), portsText(v, true))
				ok = false
			} else {
				from[vport{v, lk.fromPort}] = append(from[vport{v, lk.fromPort}], lk)
			}
		}
		if v := lk.to; v.virt != nil {
			if lk.toPort >= v.In {
				l.virtErr(v, lk.line, "has no input %s: it has %s", portText(lk.toPort, ""), portsText(v, false))
				ok = false
			} else {
				into[vport{v, lk.toPort}]++
			}
		}
		if !ok {
			l.linkErrors = true
		}
		if lk.from.virt == nil && lk.to.virt == nil {
			out = append(out, lk)
		}
	}
	// A compound port feeds one input, as an element's output does.
	for _, lks := range from {
		if len(lks) > 1 {
			l.linkErrors = true // the second link is dropped: no cascades
			v := lks[0].from
			l.virtErr(v, lks[1].line, "%s is connected twice (first at line %d): an output feeds one input; copy packets with a Tee",
				portLabel(v, lks[0].fromPort, true), lks[0].line)
		}
	}
	if !l.linkErrors && !l.compoundErrors {
		// What an unconnected port would have linked is missing inside
		// or outside: connectivity checks would only repeat it.
		n := len(l.errs)
		l.unconnectedPorts(func(n *elemInfo, p int) int { return len(from[vport{n, p}]) }, func(n *elemInfo, p int) int { return into[vport{n, p}] })
		l.linkErrors = len(l.errs) > n
	}
	// Follow each link from an ordinary element through compound ports
	// to an ordinary element.
	for _, lk := range links {
		if lk.from.virt != nil || lk.to.virt == nil {
			continue
		}
		cur := lk
		seen := map[vport]bool{}
		for cur != nil && cur.to.virt != nil {
			vp := vport{cur.to, cur.toPort}
			if seen[vp] {
				l.linkErrors = true
				l.add(&ConfigError{Pos: l.at(cur.line), Msg: fmt.Sprintf("cycle through compound ports: %s", portLabel(cur.to, cur.toPort, false))})
				cur = nil
				break
			}
			seen[vp] = true
			var next vport
			inst := cur.to.virt
			if cur.to.virtKind == virtOuter {
				next = vport{inst.input, cur.toPort}
			} else {
				next = vport{inst.outer, cur.toPort}
			}
			if lks := from[next]; len(lks) > 0 {
				cur = lks[0]
			} else {
				cur = nil // reported as not connected
			}
		}
		if cur != nil {
			out = append(out, &ilink{from: lk.from, fromPort: lk.fromPort, to: cur.to, toPort: cur.toPort, line: lk.line, toLine: cur.line})
		}
	}
	return out
}

// unconnectedPorts reports every compound port that nothing connects:
// inside the definition once per compound, at the use for each instance.
func (l *loader) unconnectedPorts(outs, ins func(*elemInfo, int) int) {
	names := make([]string, 0, len(l.insts))
	for n := range l.insts {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		inst := l.insts[n]
		if inst.outer.bad {
			continue
		}
		c := inst.comp
		// inside reports a port of the definition once, use one of inst.
		inside := func(key string, p int, format, pn string) {
			if !c.reported[key+" "+pn] {
				c.reported[key+" "+pn] = true
				l.add(&ConfigError{Pos: l.at(l.pos.item(p, "compounds", c.name, key)), Type: "compound " + quoteValue(c.name), Key: key,
					Msg: fmt.Sprintf(format, pn, pn)})
			}
		}
		use := func(format, pn string) {
			l.useErr(inst.parent, inst.name, "compound "+c.name, inst.line, "", "", format, pn)
		}
		for p, pn := range c.inputs {
			if outs(inst.input, p) == 0 {
				inside("inputs", p, "input %q leads nowhere: link input[%s] -> ... in its links", pn)
			}
			if ins(inst.outer, p) == 0 {
				use("input [%s] is not connected", pn)
			}
		}
		for p, pn := range c.outputs {
			if ins(inst.output, p) == 0 {
				inside("outputs", p, "output %q: nothing leads to it: link ... -> [%s]output in its links", pn)
			}
			if outs(inst.outer, p) == 0 {
				use("output [%s] is not connected (send what you do not want to a Discard)", pn)
			}
		}
	}
}

// portLabel names port p of a compound's node for errors.
func portLabel(v *elemInfo, p int, out bool) string {
	c := v.virt.comp
	switch v.virtKind {
	case virtInput:
		return "input" + portName(c.inputs, p)
	case virtOutput:
		return portName(c.outputs, p) + "output"
	}
	if out {
		return "output " + portName(c.outputs, p)
	}
	return "input " + portName(c.inputs, p)
}

// portNames returns the compound ports that a compound's node has on one
// side, and whether they are its inputs or its outputs: the pseudo-element
// input has the compound's inputs as its outputs, output its outputs as
// inputs.
func portNames(v *elemInfo, out bool) ([]string, string) {
	c := v.virt.comp
	if out && v.virtKind != virtInput || !out && v.virtKind == virtOutput {
		return c.outputs, "output"
	}
	return c.inputs, "input"
}

// portsText lists the ports of a compound's node on one side.
func portsText(v *elemInfo, out bool) string {
	names, what := portNames(v, out)
	if len(names) == 0 {
		return "no " + what + "s"
	}
	return fmt.Sprintf("%s (%s)", plural(len(names), what), strings.Join(names, ", "))
}

// virtErr reports a problem with a compound's port: at the use for the
// instance, inside the definition for input and output.
func (l *loader) virtErr(v *elemInfo, line int, format string, args ...any) {
	inst := v.virt
	msg := fmt.Sprintf(format, args...)
	if v.virtKind == virtOuter {
		l.useErr(inst.parent, inst.name, "compound "+inst.comp.name, line, "", "", "%s", msg)
		return
	}
	pseudo := "input"
	if v.virtKind == virtOutput {
		pseudo = "output"
	}
	l.add(&ConfigError{Pos: l.at(line), Element: pseudo, Type: "compound " + inst.comp.name, Msg: msg, Within: inst.within()})
}
