package elements

import "sync"

// GraphState holds the values the elements of one graph share: one set for
// the whole graph and one per worker. The pipeline makes one per Router,
// so two graphs in one process (tests, benchmarks) never see each other's
// values; a reload keeps it with the Router and its workers, so that the
// new graph's elements find what the old one's left (a worker's flow
// table). Elements reach it through their Context (GraphValue,
// WorkerValue), never through package variables.
//
// Values are made at construction, which is not on the hot path: the
// lock guards the maps only. What a value does at run time is its own
// business (read-mostly state behind an atomic pointer, or per-worker
// state touched by that worker alone).
type GraphState struct {
	mu      sync.Mutex
	graph   map[any]any
	workers map[int]map[any]any
}

// NewGraphState returns an empty state for one graph.
func NewGraphState() *GraphState { return &GraphState{} }

func (s *GraphState) get(worker int, key any, mk func() any) any {
	s.mu.Lock()
	defer s.mu.Unlock()
	var m map[any]any
	if worker < 0 {
		if s.graph == nil {
			s.graph = map[any]any{}
		}
		m = s.graph
	} else {
		if s.workers == nil {
			s.workers = map[int]map[any]any{}
		}
		if m = s.workers[worker]; m == nil {
			m = map[any]any{}
			s.workers[worker] = m
		}
	}
	v, ok := m[key]
	if !ok {
		v = mk()
		m[key] = v
	}
	return v
}

// state is the context's graph state; a context made without one (a test
// building a lone element) gets its own, a graph of one.
func (c *Context) state() *GraphState {
	if c.State == nil {
		c.State = NewGraphState()
	}
	return c.State
}

// GraphShared returns the value under key shared by every element of every
// worker of this graph, making it with mk on first use. Keys should be
// values of an unexported type of the package that owns the value, so
// that packages cannot collide.
func (c *Context) GraphShared(key any, mk func() any) any {
	return c.state().get(-1, key, mk)
}

// WorkerShared returns the value under key shared by the elements of this
// context's worker in this graph (e.g. the worker's flow table, shared by
// its Conntrack and FastTrack), making it with mk on first use.
func (c *Context) WorkerShared(key any, mk func() any) any {
	return c.state().get(c.Worker, key, mk)
}

// StateValue returns the value under key shared by the whole graph of s,
// as GraphValue does for a Context of that graph: what the graph-file
// loader hands a StateValidator reaches the same values as the elements
// built with s.
func StateValue[T any](s *GraphState, key any, mk func() *T) *T {
	return s.get(-1, key, func() any { return mk() }).(*T)
}

// StateValidator is a config that validates itself against the graph
// state of the router it is loaded for (a reload: the running router's),
// to reuse what that router's elements keep (IPLookup: the validated
// routes of an unchanged routes_file). The loader calls ValidateState
// instead of Validate when it has a state; without one, Validate. The
// config must not keep s (configs are compared by value).
type StateValidator interface {
	Validator
	ValidateState(s *GraphState) error
}

// GraphValue is GraphShared for a value of type *T.
func GraphValue[T any](c *Context, key any, mk func() *T) *T {
	return c.GraphShared(key, func() any { return mk() }).(*T)
}

// WorkerValue is WorkerShared for a value of type *T.
func WorkerValue[T any](c *Context, key any, mk func() *T) *T {
	return c.WorkerShared(key, func() any { return mk() }).(*T)
}

// WithState sets the context's graph state and returns the context (for
// tests that build elements of one graph by hand).
func (c *Context) WithState(s *GraphState) *Context {
	c.State = s
	return c
}
