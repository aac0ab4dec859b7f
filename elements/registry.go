package elements

import (
	"sort"
	"sync"

	"github.com/junction-dataplane/junction/conf"
)

// Type describes one element type: how to make its config, how to build an
// instance for one worker, its ports and its documentation.
type Type struct {
	// Name is what graphs write (e.g. "DecTTL").
	Name string
	// NewConfig returns a pointer to a fresh config struct holding the
	// defaults. Its exported fields, named by toml tags, are the element's
	// keys; Doc.Keys lists them in positional order. Nil means no keys.
	NewConfig func() any
	// New builds one instance for one worker from a validated config. It
	// must not start goroutines or touch the network; resources it opens
	// are released by the instance's Close.
	New func(cfg any, ctx *Context) (Element, error)
	// In and Out are the port counts; Out < 0 means the config decides
	// (the config implements PortCounter).
	In, Out int
	// Optional lists output ports that may be left unconnected: what would
	// go there is dropped and counted as "unconnected output N".
	Optional []int
	// Source marks elements that receive from a device (FromDevice).
	Source bool
	// OnePerGraph, when set, says why a graph may hold at most one
	// element of this type (Conntrack: a worker has one flow table); the
	// loader refuses a second, as New would.
	OnePerGraph string
	// FlowState marks elements whose instances keep per-flow state per
	// worker (Conntrack's table, FastTrack's flows, a plugin's, for all
	// Junction knows): in a graph with one, every packet of a flow must
	// reach one worker, so FromDevice hands packets to their flow's owner
	// (Context.FlowState).
	FlowState bool
	// TakesState marks types whose instances implement StateTaker: a
	// reload that keeps the element (same name and type) carries its
	// state over (carry.go). Dry runs report it.
	TakesState bool
	Doc        Doc
}

// Doc is an element's manual page, in Click's sections (conf.Doc).
type Doc = conf.Doc

// Key documents one config key (conf.Key).
type Key = conf.Key

// PortCounter is implemented by configs whose port counts depend on the
// config (Classifier's one output per rule, Tee(n), IPLookup's out ports).
type PortCounter interface {
	Ports() (in, out int)
}

// LinkedOutputs is implemented by configs whose output count is not known
// when the graph is loaded (a Plugin that forwarder check did not start):
// while OutputsFromLinks is true, the element has as many outputs as the
// graph's links use, none of them unconnected.
type LinkedOutputs interface {
	OutputsFromLinks() bool
}

// Validator is implemented by configs that check themselves after decoding
// (conf.Validator). The error should name the key: use KeyError.
type Validator = conf.Validator

// KeyError is a config error attached to one key, so that the loader can
// report it with the key's line (conf.KeyError).
type KeyError = conf.KeyError

// Errorf makes a KeyError (conf.Errorf).
func Errorf(key, format string, args ...any) error { return conf.Errorf(key, format, args...) }

// The registry of element types: a package variable on purpose, as
// database/sql's drivers are. It holds code, not graph state: Register
// writes it from init functions (and tests registering fakes), every
// graph reads it.
var (
	regMu sync.RWMutex
	types = map[string]*Type{}
)

// Register adds an element type. It panics on an empty name, a nil
// constructor or a duplicate name: all are programming errors found at start.
func Register(t Type) {
	if t.Name == "" {
		panic("elements: Register with empty name")
	}
	if t.New == nil {
		panic("elements: Register " + t.Name + " with nil constructor")
	}
	regMu.Lock()
	defer regMu.Unlock()
	if _, dup := types[t.Name]; dup {
		panic("elements: duplicate element type " + t.Name)
	}
	tt := t
	types[t.Name] = &tt
}

// Lookup returns the registered type with this name.
func Lookup(name string) (*Type, bool) {
	regMu.RLock()
	defer regMu.RUnlock()
	t, ok := types[name]
	return t, ok
}

// Names returns every registered type name, sorted.
func Names() []string {
	regMu.RLock()
	defer regMu.RUnlock()
	out := make([]string, 0, len(types))
	for n := range types {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}

// IsOptional reports whether output port may stay unconnected.
func (t *Type) IsOptional(port int) bool {
	for _, p := range t.Optional {
		if p == port {
			return true
		}
	}
	return false
}

// Ports returns the port counts for a decoded config.
func (t *Type) Ports(cfg any) (in, out int) {
	if pc, ok := cfg.(PortCounter); ok && t.Out < 0 {
		return pc.Ports()
	}
	return t.In, t.Out
}
