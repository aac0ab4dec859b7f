package route

import "net/netip"

// Exact returns the route for exactly prefix p (for introspection; it
// takes the writers' lock, never one the data path takes).
func (t *Table) Exact(p netip.Prefix) (Route, bool) {
	t.wmu.Lock()
	defer t.wmu.Unlock()
	v, _, ok := t.w.exact(p)
	if !ok || v == 0 {
		return Route{}, false
	}
	return routeFrom(p, t.w.nh[v-1]), true
}
