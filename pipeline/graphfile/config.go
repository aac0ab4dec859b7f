package graphfile

import (
	"errors"
	"fmt"
	"io"
	"net/netip"
	"reflect"
	"sort"
	"strings"

	"github.com/BurntSushi/toml"

	"github.com/junction-dataplane/junction/conf"
	"github.com/junction-dataplane/junction/drivers"
	"github.com/junction-dataplane/junction/elements"
	"github.com/junction-dataplane/junction/internal/safefile"
	"github.com/junction-dataplane/junction/packet"
)

// ConfigError is one problem in a graph file, with where it is and what it
// concerns. Fields that do not apply are empty.
type ConfigError struct {
	Pos     Pos
	Device  string // the [devices.NAME] table concerned (Type is then its driver)
	Element string // the element concerned ("Type@N" for an anonymous one)
	Type    string // the element's type
	Key     string // the key concerned
	Msg     string
	Suggest string // the nearest valid name, for "did you mean"
	// Within: the compound instances the line lies in, for a line of a
	// compound's definition (compound.go).
	Within string
}

// Error formats the error as
//
//	router.toml:12: element "rt" (IPLookup): key "rotes": unknown, did you mean "routes"?
func (e *ConfigError) Error() string {
	var b strings.Builder
	if p := e.Pos.String(); p != "" {
		b.WriteString(p)
		b.WriteString(": ")
	}
	switch {
	case e.Device != "":
		fmt.Fprintf(&b, "device %s", quoteValue(e.Device))
		if e.Type != "" {
			fmt.Fprintf(&b, " (%s)", e.Type)
		}
		b.WriteString(": ")
	case e.Element != "":
		fmt.Fprintf(&b, "element %s", quoteValue(e.Element))
		if e.Type != "" {
			fmt.Fprintf(&b, " (%s)", e.Type)
		}
		b.WriteString(": ")
	case e.Type != "":
		b.WriteString(e.Type)
		b.WriteString(": ")
	}
	if e.Key != "" {
		fmt.Fprintf(&b, "key %s: ", quoteValue(e.Key))
	}
	b.WriteString(e.Msg)
	if e.Suggest != "" {
		fmt.Fprintf(&b, ", did you mean %s?", quoteValue(e.Suggest))
	}
	if e.Within != "" {
		fmt.Fprintf(&b, " (in %s)", e.Within)
	}
	return b.String()
}

// ErrorList is every error found in a graph file, in file order.
type ErrorList []*ConfigError

// Error returns one error per line.
func (l ErrorList) Error() string {
	lines := make([]string, len(l))
	for i, e := range l {
		lines[i] = e.Error()
	}
	return strings.Join(lines, "\n")
}

// Unwrap lets errors.As find the individual *ConfigError values.
func (l ErrorList) Unwrap() []error {
	out := make([]error, len(l))
	for i, e := range l {
		out[i] = e
	}
	return out
}

// Load reads the graph file at path and parses it (see Parse). Only a
// regular file is read (a link to one is followed): a FIFO, whose open
// would wait for a writer and whose reads for its data, a device
// (/dev/zero never ends) or a directory is refused without being read.
// It reads at most MaxFileSize bytes and one more: a larger file (or one
// growing while it is read) is refused without being read to its end.
func Load(path string) (*Graph, error) { return LoadFor(path, nil) }

// LoadFor is Load for the router whose graph state s is (a reload: the
// running router's): configs that are elements.StateValidators validate
// against s, to reuse what that router's elements keep. A nil s is Load.
func LoadFor(path string, s *elements.GraphState) (*Graph, error) {
	f, err := safefile.OpenRegular(path)
	if nr := (*safefile.NotRegularError)(nil); errors.As(err, &nr) {
		return nil, ErrorList{{Pos: Pos{File: path, Line: 1}, Msg: "not a regular file but " + safefile.Kind(nr.Mode)}}
	}
	if err != nil {
		return nil, err
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, MaxFileSize+1))
	if err != nil {
		return nil, err
	}
	if len(data) > MaxFileSize {
		msg := fmt.Sprintf("file larger than %d bytes (MaxFileSize)", MaxFileSize)
		if fi, err := f.Stat(); err == nil && fi.Mode().IsRegular() {
			msg = fmt.Sprintf("file is %d bytes: at most %d (MaxFileSize)", fi.Size(), MaxFileSize)
		}
		return nil, ErrorList{{Pos: Pos{File: path, Line: 1}, Msg: msg}}
	}
	return ParseFor(path, data, s)
}

// Parse parses and fully validates a graph file; file names it in errors
// and becomes Graph.File. It returns either a graph that is valid as a
// whole, or a nil graph and an ErrorList with every error it found.
func Parse(file string, data []byte) (*Graph, error) { return ParseFor(file, data, nil) }

// ParseFor is Parse for the router whose graph state s is (see LoadFor).
func ParseFor(file string, data []byte, s *elements.GraphState) (*Graph, error) {
	l := &loader{file: file, g: &Graph{File: file, Batch: packet.DefaultBatch}, state: s}
	l.load(data)
	if len(l.errs) > 0 {
		sort.SliceStable(l.errs, func(i, j int) bool { return l.errs[i].Pos.Line < l.errs[j].Pos.Line })
		if n := len(l.errs); n > MaxErrors {
			more := &ConfigError{Pos: l.errs[MaxErrors].Pos,
				Msg: fmt.Sprintf("and %d more errors from here on (at most %d are reported: MaxErrors)", n-MaxErrors, MaxErrors)}
			l.errs = append(l.errs[:MaxErrors:MaxErrors], more)
		}
		return nil, l.errs
	}
	return l.g, nil
}

// The top-level tables of a graph file.
var topTables = []string{"forwarder", "devices", "tables", "compounds", "elements", "graph"}

var forwarderKeys = []string{"workers", "batch", "stats"}

// maxWorkers bounds [forwarder] workers: a typo must not start a million
// pipelines.
const maxWorkers = 1024

// Keys of [devices.NAME] handled by the loader; the rest go to the driver.
var deviceKeys = []string{"driver", "addresses", "mac"}

// elemInfo is an element while the graph is being loaded.
type elemInfo struct {
	*Element
	bad      bool      // unknown type or invalid config: ports unknown, checks skipped
	declared bool      // from an [elements] table
	used     bool      // appears in a link
	path     []string  // the TOML path of a declared element's table
	inst     *instance // the compound instance it lies in (nil: none)
	// virt, virtKind: a compound instance or its input or output, which
	// links name until splice replaces them (compound.go).
	virt     *instance
	virtKind int
	line     func(key string) int
	given    map[string]bool
	// suggested: keys offered as "did you mean" for an unknown key; their
	// absence is not reported again as "required".
	suggested map[string]bool
	// stub: a compound use that could not be made; its links lead
	// nowhere known.
	stub bool
}

// linkSrc is one link string and where it was written.
type linkSrc struct {
	text  string
	line  int
	chain []endpoint
	ends  []*elemInfo // resolved endpoints (nil where resolution failed)
	sc    *scope      // where its names are resolved (nil: the top)
}

type loader struct {
	file string
	g    *Graph
	pos  *positions
	errs ErrorList

	// state is the graph state of the router the graph is loaded for (nil:
	// none), given to StateValidators.
	state *elements.GraphState

	badDevices map[string]bool // devices whose table is broken (still "declared")
	badTables  []string        // [tables] sections with errors (reported)

	elems     map[string]*elemInfo // every named element
	order     []*elemInfo          // g.Elements' order, with bad ones too
	anonCount map[string]int       // per type, for "Type@N"
	inline    map[string]*linkDecl // inline declarations by full name
	top       *scope

	compounds  map[string]*compound
	insts      map[string]*instance // by full name
	flatTooBig bool
	// compoundErrors: a compound's definition or a use is broken, so
	// elements and links are missing (as for bad elements).
	compoundErrors bool

	graphSeen  bool
	graphLine  int
	linksLine  int
	links      []*linkSrc
	linkErrors bool // a link could not be parsed: connectivity checks would mislead
	// linksMisspelt: [graph] has a key that looks like "links".
	linksMisspelt bool
}

// linkDecl is an inline "name :: Type(args)" declaration.
type linkDecl struct {
	ep   endpoint
	line int
	src  *linkSrc // the link and endpoint index that declare it
	idx  int
	node *elemInfo // an inline compound instance, made when declared
}

func (l *loader) at(line int) Pos { return Pos{File: l.file, Line: line} }

// add records an error, its message cut to a readable size (a value it
// quotes may be as long as MaxStringLen).
func (l *loader) add(e *ConfigError) {
	e.Msg = clipMessage(e.Msg)
	l.errs = append(l.errs, e)
}

// entryLine returns the line of the array item that msg is about — an
// element's "entry N ..." or the loader's own "item N: ..." — in the array
// at path, or line if msg names no item or the array's items have no
// known lines. An error about one route of thousands names that route's
// line, not the line of "routes = [".
func (l *loader) entryLine(line int, msg string, path ...string) int {
	i, ok := entryIndex(msg)
	if !ok {
		return line
	}
	if ls := l.pos.items[pathKey(path...)]; i < len(ls) {
		return ls[i]
	}
	return line
}

// entryIndex reads the 0-based index N-1 of a message starting "entry N"
// or "item N".
func entryIndex(msg string) (int, bool) {
	for _, prefix := range []string{"entry ", "item "} {
		rest, ok := strings.CutPrefix(msg, prefix)
		if !ok {
			continue
		}
		n, j := 0, 0
		for ; j < len(rest) && j < 9 && rest[j] >= '0' && rest[j] <= '9'; j++ {
			n = n*10 + int(rest[j]-'0')
		}
		if j > 0 && n >= 1 && (j == len(rest) || rest[j] == ' ' || rest[j] == ':') {
			return n - 1, true
		}
	}
	return 0, false
}

func (l *loader) errorf(line int, key, suggest, format string, args ...any) {
	l.add(&ConfigError{Pos: l.at(line), Key: key, Msg: fmt.Sprintf(format, args...), Suggest: suggest})
}

func (l *loader) elemErr(ei *elemInfo, line int, key, suggest, format string, args ...any) {
	e := &ConfigError{Pos: l.at(line), Element: ei.Name, Key: key, Msg: fmt.Sprintf(format, args...), Suggest: suggest}
	if ei.Type != nil {
		e.Type = ei.Type.Name
	}
	if ei.inst != nil {
		e.Within = ei.inst.within()
	}
	l.add(e)
}

func (l *loader) devErr(d *Device, line int, key, suggest, format string, args ...any) {
	e := &ConfigError{Pos: l.at(line), Device: d.Name, Key: key, Msg: fmt.Sprintf(format, args...), Suggest: suggest}
	if d.Driver != nil {
		e.Type = d.Driver.Name
	}
	l.add(e)
}

// keysByLine returns the keys of m in the order they were written (the
// decoded map has none), by name for equal lines.
func (l *loader) keysByLine(m map[string]any, path ...string) []string {
	keys := sortedKeys(m)
	lines := make(map[string]int, len(keys))
	for _, k := range keys {
		lines[k] = l.pos.line(append(append([]string(nil), path...), k)...)
	}
	sort.SliceStable(keys, func(i, j int) bool { return lines[keys[i]] < lines[keys[j]] })
	return keys
}

func sortedKeys(m map[string]any) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

func (l *loader) load(data []byte) {
	// The limits first: a depth bomb is slow in the TOML decoder itself.
	if le := checkLimits(string(data)); le != nil {
		l.errorf(le.line, "", "", "%s", le.msg)
		return
	}
	var top map[string]any
	if _, err := toml.Decode(string(data), &top); err != nil {
		line, msg := 0, err.Error()
		var pe toml.ParseError
		var ppe *toml.ParseError
		switch {
		case errors.As(err, &pe):
			line, msg = pe.Position.Line, pe.Message
		case errors.As(err, &ppe):
			line, msg = ppe.Position.Line, ppe.Message
		}
		// The decoder gives line 0 for some errors at the end of the
		// input; every error names a line of the file.
		lines := strings.Count(string(data), "\n") + 1
		line = min(max(line, 1), lines)
		l.errorf(line, "", "", "TOML syntax: %s", msg)
		return
	}
	l.pos = scanPositions(string(data))
	l.elems = map[string]*elemInfo{}
	l.anonCount = map[string]int{}
	l.inline = map[string]*linkDecl{}
	l.badDevices = map[string]bool{}
	// Route tables first: the elements that read them take their ports
	// from them (tables.go).
	if t, ok := top["tables"].(map[string]any); ok {
		l.routeTables(t)
	}
	l.compounds = map[string]*compound{}
	l.insts = map[string]*instance{}
	l.top = &scope{anonCount: l.anonCount}

	// Compounds first: [elements] may use one defined further down.
	if c, ok := top["compounds"].(map[string]any); ok {
		l.compoundDefs(c)
	}
	for _, k := range l.keysByLine(top) {
		line := l.pos.line(k)
		v := top[k]
		tbl, isTable := v.(map[string]any)
		switch {
		case !contains(topTables, k):
			if !isTable {
				if contains(forwarderKeys, k) {
					l.errorf(line, k, "", "unknown top-level key (it belongs under [forwarder])")
				} else {
					l.errorf(line, k, "", "unknown top-level key (keys belong in a table: %s)", tableList())
				}
				continue
			}
			l.errorf(line, "", suggest(k, topTables), "unknown table [%s] (tables are %s)", k, tableList())
		case !isTable:
			l.errorf(line, k, "", "want a table [%s], got %s", k, conf.TypeName(v))
			if k == "graph" {
				l.graphSeen, l.graphLine, l.linksLine, l.linkErrors = true, line, line, true
			}
		case k == "forwarder":
			l.forwarder(tbl)
		case k == "devices":
			l.devices(tbl)
		case k == "tables":
		case k == "compounds":
		case k == "elements":
			l.declare(l.top, tbl, "elements")
		case k == "graph":
			l.graphTable(tbl, line)
		}
	}
	l.validate(l.resolveLinks())
	l.checkTablesUsed()
}

func tableList() string {
	parts := make([]string, len(topTables))
	for i, t := range topTables {
		parts[i] = "[" + t + "]"
	}
	return strings.Join(parts, ", ")
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

func (l *loader) forwarder(m map[string]any) {
	for _, k := range l.keysByLine(m, "forwarder") {
		line := l.pos.line("forwarder", k)
		key := "forwarder." + k
		v := m[k]
		switch k {
		case "workers":
			var n int
			if err := conf.SetValue(reflect.ValueOf(&n).Elem(), v); err != nil {
				l.errorf(line, key, "", "%v", err)
			} else if n < 0 || n > maxWorkers {
				l.errorf(line, key, "", "must be 0..%d (0 = one worker per CPU), got %d", maxWorkers, n)
			} else {
				l.g.Workers = n
			}
		case "batch":
			var n int
			if err := conf.SetValue(reflect.ValueOf(&n).Elem(), v); err != nil {
				l.errorf(line, key, "", "%v", err)
			} else if n < 1 || n > packet.MaxBatch {
				l.errorf(line, key, "", "must be 1..%d, got %d", packet.MaxBatch, n)
			} else {
				l.g.Batch = n
			}
		case "stats":
			var s string
			if err := conf.SetValue(reflect.ValueOf(&s).Elem(), v); err != nil {
				l.errorf(line, key, "", "%v", err)
			} else {
				l.g.Stats = s
			}
		default:
			s := suggest(k, forwarderKeys)
			if s != "" {
				s = "forwarder." + s
			}
			l.errorf(line, key, s, "unknown (keys: %s)", strings.Join(forwarderKeys, ", "))
		}
	}
}

func (l *loader) devices(m map[string]any) {
	for _, name := range l.keysByLine(m, "devices") {
		line := l.pos.line("devices", name)
		d := &Device{Name: name, Index: len(l.g.Devices), Pos: l.at(line)}
		l.g.Devices = append(l.g.Devices, d)
		if name == "" {
			l.errorf(line, "", "", "a device needs a name: [devices.NAME]")
			l.badDevices[name] = true
			continue
		}
		tbl, ok := m[name].(map[string]any)
		if !ok {
			l.devErr(d, line, "", "", "want a table [devices.%s], got %s", name, conf.TypeName(m[name]))
			l.badDevices[name] = true
			continue
		}
		if !l.device(d, tbl) {
			l.badDevices[name] = true
		}
	}
}

// device decodes one device table; it reports whether it is valid.
func (l *loader) device(d *Device, tbl map[string]any) bool {
	n := len(l.errs)
	keyLine := func(k string) int { return l.pos.line("devices", d.Name, k) }
	driverNames := drivers.Names()
	switch v, ok := tbl["driver"]; {
	case !ok:
		// A misspelt "driver" key is the likely cause: point at it.
		for _, k := range l.keysByLine(tbl, "devices", d.Name) {
			if suggest(k, []string{"driver"}) == "driver" {
				l.devErr(d, keyLine(k), k, "driver", "unknown")
				return false
			}
		}
		l.devErr(d, d.Pos.Line, "driver", "", "required (one of: %s)", strings.Join(driverNames, ", "))
	default:
		var s string
		if err := conf.SetValue(reflect.ValueOf(&s).Elem(), v); err != nil {
			l.devErr(d, keyLine("driver"), "driver", "", "%v", err)
			break
		}
		drv, ok := drivers.Lookup(s)
		if !ok {
			l.devErr(d, keyLine("driver"), "driver", suggest(s, driverNames), "unknown driver %s (drivers: %s)", quoteValue(s), strings.Join(driverNames, ", "))
			break
		}
		d.Driver = drv
	}
	var cfgV reflect.Value
	var fields []conf.Field
	if d.Driver != nil && d.Driver.NewConfig != nil {
		cfg, err := safeConfig(d.Driver.NewConfig)
		if err != nil {
			l.devErr(d, d.Pos.Line, "", "", "driver %s: %v", d.Driver.Name, err)
			return false
		}
		d.Config = cfg
		if cfg != nil {
			cfgV = reflect.ValueOf(cfg).Elem()
			fields = conf.Fields(cfgV.Type())
		}
	}
	for _, k := range l.keysByLine(tbl, "devices", d.Name) {
		line, v := keyLine(k), tbl[k]
		switch k {
		case "driver":
		case "addresses":
			var list []string
			if err := conf.SetValue(reflect.ValueOf(&list).Elem(), v); err != nil {
				l.devErr(d, l.entryLine(line, err.Error(), "devices", d.Name, k), k, "", "%v", err)
				continue
			}
			for i, s := range list {
				p, err := netip.ParsePrefix(s)
				if err != nil {
					l.devErr(d, l.pos.item(i, "devices", d.Name, k), k, "", "bad address %s: want ADDRESS/LENGTH, e.g. \"10.1.0.1/24\"", quoteValue(s))
					continue
				}
				d.Addresses = append(d.Addresses, p)
			}
		case "mac":
			var s string
			if err := conf.SetValue(reflect.ValueOf(&s).Elem(), v); err != nil {
				l.devErr(d, line, k, "", "%v", err)
				continue
			}
			mac, ok := packet.ParseMAC(s)
			if !ok {
				l.devErr(d, line, k, "", "bad MAC %s: want aa:bb:cc:dd:ee:ff", quoteValue(s))
				continue
			}
			d.MAC = mac
		default:
			if d.Driver == nil {
				continue // the driver is unknown, so are its keys
			}
			f, ok := conf.FindField(fields, k)
			if !ok {
				cands := append(append([]string(nil), deviceKeys...), conf.FieldNames(fields)...)
				l.devErr(d, line, k, suggest(k, cands), "unknown (keys: %s)", strings.Join(cands, ", "))
				continue
			}
			if err := conf.SetValue(conf.FieldValue(cfgV, f), v); err != nil {
				l.devErr(d, l.entryLine(line, err.Error(), "devices", d.Name, k), k, "", "%v", err)
			}
		}
	}
	if len(l.errs) > n {
		return false
	}
	if vd, ok := d.Config.(interface{ Validate() error }); ok {
		if err := safely(d.Driver.Name+" config Validate", vd.Validate); err != nil {
			line, key, msg := d.Pos.Line, "", err.Error()
			var ke *elements.KeyError
			if errors.As(err, &ke) {
				key, msg = ke.Key, ke.Err.Error()
				if _, given := tbl[ke.Key]; given {
					line = l.entryLine(keyLine(ke.Key), msg, "devices", d.Name, ke.Key)
				}
			}
			l.devErr(d, line, key, "", "%s", msg)
			return false
		}
	}
	return true
}

// safely calls f (code of an element or driver package) and turns a panic
// into an error, so that no graph file can crash the loader.
func safely(what string, f func() error) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("internal error: %s panicked: %v", what, r)
		}
	}()
	return f()
}

// safeConfig calls a NewConfig and checks that it returns a pointer to a
// struct (or nil).
func safeConfig(newConfig func() any) (cfg any, err error) {
	err = safely("NewConfig", func() error {
		cfg = newConfig()
		return nil
	})
	if err != nil {
		return nil, err
	}
	if cfg == nil {
		return nil, nil
	}
	if rv := reflect.ValueOf(cfg); rv.Kind() != reflect.Pointer || rv.IsNil() || rv.Elem().Kind() != reflect.Struct {
		return nil, fmt.Errorf("internal error: NewConfig returned %T, want a pointer to a struct", cfg)
	}
	return cfg, nil
}

// validName reports whether name can be written in links.
func validName(name string) bool {
	if name == "" || !isIdentStart(name[0]) {
		return false
	}
	for i := 1; i < len(name); i++ {
		if c := name[i]; !isIdentChar(c) && c != '-' {
			return false
		}
	}
	return !strings.Contains(name, "->")
}

// declare creates the elements of an [elements] table in scope sc: the
// file's, or a compound's ([compounds.X.elements], at path).
func (l *loader) declare(sc *scope, m map[string]any, path ...string) {
	for _, name := range l.keysByLine(m, path...) {
		tpath := append(append([]string(nil), path...), name)
		line := l.pos.line(tpath...)
		full := sc.prefix + name
		if tbl, ok := m[name].(map[string]any); ok && validName(name) {
			if typ, ok := tbl["type"].(string); ok && l.compounds[typ] != nil {
				if sc.inst != nil && (name == "input" || name == "output") {
					continue // reported with the definition
				}
				args := make(map[string]any, len(tbl))
				for k, v := range tbl {
					if k != "type" {
						args[k] = v
					}
				}
				l.instantiate(sc, full, l.compounds[typ], args, func(k string) int { return l.pos.line(append(tpath, k)...) }, line)
				continue
			}
		}
		ei := &elemInfo{
			Element:  &Element{Name: full, Pos: l.at(line), Instance: sc.instName()},
			declared: true,
			given:    map[string]bool{},
			path:     tpath,
			inst:     sc.inst,
		}
		ei.line = func(key string) int {
			// A dotted key names a key inside a table value (a Plugin's
			// config.min): its own line, or the table's.
			return l.pos.line(append(append([]string(nil), tpath...), strings.Split(key, ".")...)...)
		}
		l.elems[full] = ei
		l.order = append(l.order, ei)
		if sc.inst != nil && (name == "input" || name == "output") {
			ei.bad = true // reported with the definition
			continue
		}
		if !validName(name) {
			ei.bad = true
			l.elemErr(ei, line, "", "", "bad element name: links need a letter or '_' then letters, digits, '_' or '-'")
			continue
		}
		tbl, ok := m[name].(map[string]any)
		if !ok {
			ei.bad = true
			l.elemErr(ei, line, "", "", "want a table [elements.%s], got %s", name, conf.TypeName(m[name]))
			continue
		}
		l.elementType(ei, tbl)
	}
}

// elementType finds the type of a declared element and decodes its table.
func (l *loader) elementType(ei *elemInfo, tbl map[string]any) {
	tv, ok := tbl["type"]
	if !ok {
		ei.bad = true
		// A misspelt "type" key is the likely cause: point at it.
		for _, k := range l.keysByLine(tbl, ei.path...) {
			if suggest(k, []string{"type"}) == "type" {
				l.elemErr(ei, ei.line(k), k, "type", "unknown")
				return
			}
		}
		l.elemErr(ei, ei.Pos.Line, "type", "", "required: every element has a type")
		return
	}
	var typ string
	if err := conf.SetValue(reflect.ValueOf(&typ).Elem(), tv); err != nil {
		ei.bad = true
		l.elemErr(ei, ei.line("type"), "type", "", "%v", err)
		return
	}
	t, ok := elements.Lookup(typ)
	if !ok {
		ei.bad = true
		l.elemErr(ei, ei.line("type"), "type", l.suggestType(typ), "unknown element type %s", quoteValue(typ))
		return
	}
	ei.Type = t
	l.decodeTable(ei, tbl)
}

// newConfig makes ei's config and returns its struct value and keys.
func (l *loader) newConfig(ei *elemInfo, line int) (reflect.Value, []conf.Field, bool) {
	if ei.Type.NewConfig == nil {
		return reflect.Value{}, nil, true
	}
	cfg, err := safeConfig(ei.Type.NewConfig)
	if err != nil {
		l.elemErr(ei, line, "", "", "%v", err)
		return reflect.Value{}, nil, false
	}
	ei.Config = cfg
	if cfg == nil {
		return reflect.Value{}, nil, true
	}
	rv := reflect.ValueOf(cfg).Elem()
	return rv, conf.Fields(rv.Type()), true
}

// decodeTable decodes an [elements.NAME] table into ei's config.
func (l *loader) decodeTable(ei *elemInfo, tbl map[string]any) {
	n := len(l.errs)
	rv, fields, ok := l.newConfig(ei, ei.Pos.Line)
	if !ok {
		ei.bad = true
		return
	}
	for _, k := range l.keysByLine(tbl, ei.path...) {
		if k == "type" {
			continue
		}
		f, ok := conf.FindField(fields, k)
		if !ok {
			cands := append([]string{"type"}, conf.FieldNames(fields)...)
			msg := "unknown"
			if len(fields) == 0 {
				msg = "unknown (" + ei.Type.Name + " has no keys)"
			}
			s := suggest(k, cands)
			if s != "" {
				if ei.suggested == nil {
					ei.suggested = map[string]bool{}
				}
				ei.suggested[s] = true
			}
			l.elemErr(ei, ei.line(k), k, s, "%s", msg)
			continue
		}
		ei.given[k] = true
		if err := conf.SetValue(conf.FieldValue(rv, f), tbl[k]); err != nil {
			l.elemErr(ei, l.entryLine(ei.line(k), err.Error(), append(ei.path, k)...), k, "", "%v", err)
		}
	}
	l.finish(ei, ei.Pos.Line, len(l.errs) > n)
}

// decodeArgs fills ei's config from inline arguments, in Doc.Keys order.
func (l *loader) decodeArgs(ei *elemInfo, args []string, line int) {
	n := len(l.errs)
	rv, fields, ok := l.newConfig(ei, line)
	if !ok {
		ei.bad = true
		return
	}
	keys := ei.Type.Doc.Keys
	if len(args) > 0 && !rv.IsValid() {
		l.elemErr(ei, line, "", "", "too many arguments: %s takes none, got %d", ei.Type.Name, len(args))
		ei.bad = true
		return
	}
	pos := len(args) // the positional arguments come first, then the keywords
	for i, a := range args {
		if _, _, ok := keywordArg(a, keys); ok {
			pos = i
			break
		}
	}
	field := func(k string) (reflect.Value, bool) {
		f, ok := conf.FindField(fields, k)
		if !ok {
			l.elemErr(ei, line, k, "", "internal error: %s documents key %q but its config has no such field", ei.Type.Name, k)
			ei.bad = true
			return reflect.Value{}, false
		}
		return conf.FieldValue(rv, f), true
	}
	ai := 0
	for _, k := range keys {
		if ai >= pos {
			break
		}
		dst, ok := field(k.Name)
		if !ok {
			return
		}
		ei.given[k.Name] = true
		if k.Variadic && dst.Kind() == reflect.Slice {
			dst.Set(reflect.MakeSlice(dst.Type(), 0, pos-ai))
			for ; ai < pos; ai++ {
				if err := conf.AppendText(dst, args[ai]); err != nil {
					l.elemErr(ei, line, k.Name, "", "argument %d: %v", ai+1, err)
				}
			}
			break
		}
		if err := conf.SetText(dst, args[ai]); err != nil {
			l.elemErr(ei, line, k.Name, "", "argument %d: %v", ai+1, err)
		}
		ai++
	}
	if ai < pos {
		names := make([]string, len(keys))
		for i, k := range keys {
			names[i] = k.Name
		}
		l.elemErr(ei, line, "", "", "too many arguments: %s takes at most %d (%s), got %d",
			ei.Type.Name, len(keys), strings.Join(names, ", "), pos)
	}
	for i := pos; i < len(args); i++ {
		name, val, ok := keywordArg(args[i], keys)
		switch {
		case !ok:
			l.elemErr(ei, line, "", "", "argument %d: %s after keyword arguments: positional arguments come first (or write it KEY = VALUE)", i+1, conf.Quote(args[i]))
			continue
		case ei.given[name]:
			l.elemErr(ei, line, name, "", "argument %d: key %q given twice", i+1, name)
			continue
		}
		dst, ok := field(name)
		if !ok {
			return
		}
		ei.given[name] = true
		if err := setKeywordArg(dst, val); err != nil {
			l.elemErr(ei, line, name, "", "argument %d: %v", i+1, err)
		}
	}
	l.finish(ei, line, len(l.errs) > n)
}

// keywordArg splits inline argument a written "KEY = VALUE" where KEY is
// one of keys (spaces around "=" optional). Anything else, a NAME=VALUE
// item of a list included (Conntrack's "udp=20s"), is positional.
func keywordArg(a string, keys []elements.Key) (name, value string, ok bool) {
	eq := strings.IndexByte(a, '=')
	if eq <= 0 {
		return "", "", false
	}
	name, value = strings.TrimSpace(a[:eq]), strings.TrimSpace(a[eq+1:])
	if value == "" {
		return "", "", false
	}
	for _, k := range keys {
		if k.Name == name {
			return name, value, true
		}
	}
	return "", "", false
}

// setKeywordArg sets dst from a keyword argument's value: a list key takes
// "[A, B, ...]" (or one item, a list of one), anything else one value read
// as a positional argument is.
func setKeywordArg(dst reflect.Value, v string) error {
	if dst.Kind() != reflect.Slice || !strings.HasPrefix(v, "[") || !strings.HasSuffix(v, "]") {
		return conf.SetText(dst, v)
	}
	items, err := splitArgs(v[1 : len(v)-1])
	if err != nil {
		return err
	}
	dst.Set(reflect.MakeSlice(dst.Type(), 0, len(items)))
	for _, it := range items {
		if err := conf.AppendText(dst, it); err != nil {
			return err
		}
	}
	return nil
}

// finish checks required keys, validates the config and sets the ports.
func (l *loader) finish(ei *elemInfo, line int, failed bool) {
	for _, k := range ei.Type.Doc.Keys {
		if k.Required && !ei.given[k.Name] && !ei.suggested[k.Name] {
			l.elemErr(ei, line, k.Name, "", "required")
			failed = true
		}
	}
	if failed || !l.bindTable(ei, line) {
		ei.bad = true
		return
	}
	if v, ok := ei.Config.(elements.Validator); ok {
		validate := v.Validate
		if sv, ok := v.(elements.StateValidator); ok && l.state != nil {
			validate = func() error { return sv.ValidateState(l.state) }
		}
		if err := safely(ei.Type.Name+" Validate", validate); err != nil {
			eline, key, msg := line, "", err.Error()
			var ke *elements.KeyError
			if errors.As(err, &ke) {
				key, msg = ke.Key, ke.Err.Error()
				top, _, _ := strings.Cut(ke.Key, ".")
				if ei.declared && ei.given[top] {
					eline = ei.line(ke.Key)
					eline = l.entryLine(eline, msg, append(append([]string(nil), ei.path...), strings.Split(ke.Key, ".")...)...)
				}
			}
			l.elemErr(ei, eline, key, "", "%s", msg)
			ei.bad = true
			return
		}
	}
	err := safely(ei.Type.Name+" Ports", func() error {
		ei.In, ei.Out = ei.Type.Ports(ei.Config)
		return nil
	})
	if err == nil && (ei.In < 0 || ei.Out < 0 || ei.In > maxPort || ei.Out > maxPort) {
		err = fmt.Errorf("internal error: %s has port counts %d in, %d out", ei.Type.Name, ei.In, ei.Out)
	}
	if err != nil {
		l.elemErr(ei, line, "", "", "%v", err)
		ei.bad = true
	}
}

func (l *loader) graphTable(m map[string]any, line int) {
	l.graphSeen, l.graphLine = true, line
	for _, k := range l.keysByLine(m, "graph") {
		kline := l.pos.line("graph", k)
		if k != "links" {
			s := suggest(k, []string{"links"})
			l.linksMisspelt = l.linksMisspelt || s != ""
			l.errorf(kline, "graph."+k, s, "unknown (the only key of [graph] is links)")
			continue
		}
		l.linksLine = kline
		items, ok := m[k].([]any)
		if !ok {
			l.errorf(kline, "graph.links", "", "want an array of strings, got %s", conf.TypeName(m[k]))
			l.linkErrors = true
			continue
		}
		for i, it := range items {
			iline := l.pos.item(i, "graph", "links")
			s, ok := it.(string)
			if !ok {
				l.errorf(iline, "graph.links", "", "item %d: want a link string, got %s", i+1, conf.TypeName(it))
				l.linkErrors = true
				continue
			}
			l.links = append(l.links, &linkSrc{text: s, line: iline})
		}
	}
}
