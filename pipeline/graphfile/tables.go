package graphfile

import (
	"errors"
	"fmt"
	"reflect"
	"strings"

	"github.com/junction-dataplane/junction/conf"
	"github.com/junction-dataplane/junction/elements"
	"github.com/junction-dataplane/junction/elements/ip/tables"
)

// Route tables: [tables.NAME] sections, each a route table (tables.Config)
// that the IPLookups naming it read, all of them one table in memory.
// They are decoded before the elements, so that an element's ports (a
// lookup has one per port its table's routes name) are known when the
// element is validated.

// Table is one [tables.NAME] section.
type Table struct {
	Name   string
	Config *tables.Config // decoded and validated
	Pos    Pos
	Users  []string // the elements that read it, in graph order
}

// Table returns the route table with this name (nil: none).
func (g *Graph) Table(name string) *Table {
	for _, t := range g.Tables {
		if t.Name == name {
			return t
		}
	}
	return nil
}

// tableReader is an element config that reads a route table of the graph
// (IPLookup without routes of its own).
type tableReader interface {
	ReadsTable() (name string, ok bool)
	UseTable(*tables.Config)
}

// tableErr reports a problem of table name ([tables.NAME]), and of its
// key if key is not "": `table "main": key "routes": ...`.
func (l *loader) tableErr(name string, line int, key, suggest, format string, args ...any) {
	prefix := "table " + quoteValue(name) + ": "
	if key != "" {
		prefix += "key " + quoteValue(key) + ": "
	}
	l.add(&ConfigError{Pos: l.at(line), Msg: prefix + fmt.Sprintf(format, args...), Suggest: suggest})
}

// routeTables decodes the [tables] sections.
func (l *loader) routeTables(m map[string]any) {
	for _, name := range l.keysByLine(m, "tables") {
		line := l.pos.line("tables", name)
		if !validName(name) {
			l.tableErr(name, line, "", "", "bad table name: a letter or '_' then letters, digits, '_' or '-'")
			continue
		}
		tbl, ok := m[name].(map[string]any)
		if !ok {
			l.tableErr(name, line, "", "", "want a table [tables.%s], got %s", name, conf.TypeName(m[name]))
			continue
		}
		t := &Table{Name: name, Config: &tables.Config{Name: name}, Pos: l.at(line)}
		if l.decodeRouteTable(t, tbl) {
			l.g.Tables = append(l.g.Tables, t)
		} else {
			l.badTables = append(l.badTables, name)
		}
	}
}

// decodeRouteTable decodes and validates one section; it reports whether
// it is valid.
func (l *loader) decodeRouteTable(t *Table, tbl map[string]any) bool {
	c := t.Config
	n := len(l.errs)
	keyLine := func(k string) int { return l.pos.line("tables", t.Name, k) }
	rv := reflect.ValueOf(c).Elem()
	fields := conf.Fields(rv.Type())
	for _, k := range l.keysByLine(tbl, "tables", t.Name) {
		f, ok := conf.FindField(fields, k)
		if !ok {
			names := conf.FieldNames(fields)
			l.tableErr(t.Name, keyLine(k), k, suggest(k, names), "unknown (keys: %s)", strings.Join(names, ", "))
			continue
		}
		if err := conf.SetValue(conf.FieldValue(rv, f), tbl[k]); err != nil {
			l.tableErr(t.Name, l.entryLine(keyLine(k), err.Error(), "tables", t.Name, k), k, "", "%v", err)
		}
	}
	if len(l.errs) > n {
		return false
	}
	validate := c.Validate
	if l.state != nil {
		validate = func() error { return c.ValidateState(l.state) }
	}
	if err := safely("route table Validate", validate); err != nil {
		line, key, msg := t.Pos.Line, "", err.Error()
		var ke *elements.KeyError
		if errors.As(err, &ke) {
			key, msg = ke.Key, ke.Err.Error()
			if _, given := tbl[key]; given {
				line = l.entryLine(keyLine(key), msg, "tables", t.Name, key)
			}
		}
		l.tableErr(t.Name, line, key, "", "%s", msg)
		return false
	}
	return true
}

// bindTable gives ei's config the graph's table it reads; it reports false
// (after an error naming the table key) when the graph has no such table.
func (l *loader) bindTable(ei *elemInfo, line int) bool {
	tr, ok := ei.Config.(tableReader)
	if !ok {
		return true
	}
	name, reads := tr.ReadsTable()
	if !reads {
		return true
	}
	if t := l.g.Table(name); t != nil {
		tr.UseTable(t.Config)
		t.Users = append(t.Users, ei.Name)
		return true
	}
	for _, b := range l.badTables {
		if b == name {
			return false // its errors are reported
		}
	}
	eline := line
	if ei.declared && ei.given["table"] {
		eline = ei.line("table")
	}
	var names []string
	for _, t := range l.g.Tables {
		names = append(names, t.Name)
	}
	msg := "reads route table " + quoteValue(name) + ", which the graph does not declare"
	if len(names) == 0 {
		msg += " (declare it as [tables." + name + "] with routes, routes_file or source = \"kernel\", or give the element routes of its own)"
	}
	l.elemErr(ei, eline, "table", suggest(name, names), "%s", msg)
	return false
}

// checkTablesUsed reports a table no element reads: its routes would
// route nothing (as a device no element uses is an error).
func (l *loader) checkTablesUsed() {
	for _, ei := range l.order {
		if ei.bad {
			return // a broken element may be the table's reader
		}
	}
	for _, t := range l.g.Tables {
		if len(t.Users) == 0 {
			l.tableErr(t.Name, t.Pos.Line, "", "", "no IPLookup reads it (an IPLookup without routes of its own reads table %s, or names one with table = \"%s\")", quoteValue(tables.Main), t.Name)
		}
	}
}
