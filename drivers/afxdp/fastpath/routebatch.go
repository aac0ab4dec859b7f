package fastpath

import (
	"errors"
	"fmt"
	"net/netip"

	"github.com/cilium/ebpf"
)

// Route changes in batches: a routing daemon's full table is a million
// routes. IPv4 routes are stores into the table's arrays (dir4.go), all
// of a batch under one lock. IPv6 routes go to an LPM trie, where one
// bpf(2) call per route (the call, the kernel's copy of each key and
// value into memory of their own, the library's marshalling) cost as
// much CPU as the trie's own insertions: a batch is one
// BPF_MAP_UPDATE_BATCH or BPF_MAP_DELETE_BATCH (the LPM trie takes them
// since Linux 5.x's generic batch operations); the kernel stops a batch
// at the first element it refuses and says how many it did, and the rest
// then go one by one, so that each refused route gets its own error as
// SetRoute would give it. A kernel without batch operations on the trie
// (kfeature.LPMTrieBatch, probed once) gets every route one by one.

// RouteChange is one route of a SetRoutes batch.
type RouteChange struct {
	Prefix netip.Prefix
	Route  Route
}

// SetRoutes adds or replaces each route of cs, as SetRoute does, and sets
// errs[i] (len(errs) ≥ len(cs)) to route i's error or nil.
func (t *Tables) SetRoutes(cs []RouteChange, errs []error) {
	var (
		k6 []fastpathRoute6Key
		v6 []fastpathRoute6
		i6 []int
	)
	// The IPv4 routes under one lock; the IPv6 batches' system calls
	// after it.
	t.dir.mu.Lock()
	for i, c := range cs {
		errs[i] = nil
		if c.Prefix.IsValid() && is6(c.Prefix.Addr()) {
			v, err := route6Value(c.Prefix, c.Route)
			if err != nil {
				errs[i] = err
				continue
			}
			k6, v6, i6 = append(k6, *route6Key(c.Prefix)), append(v6, v), append(i6, i)
			continue
		}
		p, err := prefix4(c.Prefix)
		if err != nil {
			errs[i] = err
			continue
		}
		v, err := routeValue(p, c.Route)
		if err != nil {
			errs[i] = err
			continue
		}
		errs[i] = t.dir.setLocked(p, v)
	}
	t.dir.mu.Unlock()
	batchUpdate(t.routes6, k6, v6, i6, errs, t.routeBatches)
}

// DeleteRoutes removes each prefix of ps, as DeleteRoute does (a missing
// one is not an error), and sets errs[i] to prefix i's error or nil.
func (t *Tables) DeleteRoutes(ps []netip.Prefix, errs []error) {
	var (
		k6 []fastpathRoute6Key
		i6 []int
	)
	// The IPv4 routes under one lock; the IPv6 batches' system calls
	// after it.
	t.dir.mu.Lock()
	for i, p := range ps {
		errs[i] = nil
		if p.IsValid() && is6(p.Addr()) {
			k6, i6 = append(k6, *route6Key(p)), append(i6, i)
			continue
		}
		p, err := prefix4(p)
		if err != nil {
			errs[i] = err
			continue
		}
		errs[i] = t.dir.delLocked(p)
	}
	t.dir.mu.Unlock()
	batchDelete(t.routes6, k6, i6, errs, t.routeBatches)
}

// batchUpdate puts keys[j] → vals[j] into m, setting errs[at[j]]; in
// batches when the kernel takes them (batched), else one by one.
func batchUpdate[K, V any](m *ebpf.Map, keys []K, vals []V, at []int, errs []error, batched bool) {
	for done := 0; done < len(keys); {
		if batched {
			n, err := m.BatchUpdate(keys[done:], vals[done:], nil)
			if err == nil {
				return
			}
			done += max(n, 0)
		}
		if done >= len(keys) {
			return
		}
		// The element the kernel stopped at (or, without batches, each
		// of the rest) on its own, for its own error.
		errs[at[done]] = m.Put(&keys[done], &vals[done])
		done++
	}
}

// batchDelete removes keys[j] from m, setting errs[at[j]]; a missing key
// is no error. Batched as batchUpdate.
func batchDelete[K any](m *ebpf.Map, keys []K, at []int, errs []error, batched bool) {
	for done := 0; done < len(keys); {
		if batched {
			n, err := m.BatchDelete(keys[done:], nil)
			if err == nil {
				return
			}
			done += max(n, 0)
		}
		if done >= len(keys) {
			return
		}
		if err := m.Delete(&keys[done]); err != nil && !errors.Is(err, ebpf.ErrKeyNotExist) {
			errs[at[done]] = err
		}
		done++
	}
}

// routeValue is what the IPv4 route map holds for r (p names it in errors).
func routeValue(p netip.Prefix, r Route) (fastpathRoute, error) {
	var v fastpathRoute
	ifindex, local, err := checkRoute(p, r, false)
	if err != nil {
		return v, err
	}
	if local {
		v.Flags = routeFlagLocal
		return v, nil
	}
	v.Ifindex = ifindex
	if r.Gateway.IsValid() {
		gw, _ := ipv4(r.Gateway)
		v.Gateway = wire32(gw)
	}
	return v, nil
}

// route6Value is what the IPv6 route map holds for r.
func route6Value(p netip.Prefix, r Route) (fastpathRoute6, error) {
	var v fastpathRoute6
	ifindex, local, err := checkRoute(p, r, true)
	if err != nil {
		return v, err
	}
	if local {
		v.Flags = routeFlagLocal
		return v, nil
	}
	v.Ifindex = ifindex
	if r.Gateway.IsValid() {
		v.Gateway = wire128(r.Gateway.As16())
	}
	return v, nil
}

// checkRoute says whether r is a local route and, if not, checks its
// interface and that its gateway (if any) is of the family (v6) of the
// map it goes into.
func checkRoute(p netip.Prefix, r Route, v6 bool) (ifindex uint32, local bool, err error) {
	if r.Local {
		return 0, true, nil
	}
	if r.Ifindex <= 0 || r.Ifindex > maxIfindex {
		return 0, false, fmt.Errorf("fastpath: route %v: bad ifindex %d", p, r.Ifindex)
	}
	if r.Gateway.IsValid() {
		if _, is4 := ipv4(r.Gateway); v6 == is4 || v6 && !is6(r.Gateway) {
			fam := "IPv4"
			if v6 {
				fam = "IPv6"
			}
			return 0, false, fmt.Errorf("fastpath: route %v: gateway %v is not %s", p, r.Gateway, fam)
		}
	}
	return uint32(r.Ifindex), false, nil
}

// maxIfindex bounds an interface index the maps hold (a u32).
const maxIfindex = 1<<32 - 1
