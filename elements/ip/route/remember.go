package route

import (
	"hash/maphash"
	"sync"

	"github.com/junction-dataplane/junction/elements"
)

// Set is a routes configuration as LoadSet read it: parsed, possibly
// validated already. It is a value: two loads of the same inputs give
// equal Sets (the same routes, when the second found the first's in a
// SetCache), so that a reload sees an unchanged configuration as equal.
type Set struct {
	rs  *routeSet
	key routeSetKey
}

// SetCache remembers validated route sets by what they were made from
// (the routes entries, the routes_file's name and a hash of its contents,
// the limit), so that loading a graph again, as a reload does, does not
// parse and check a million routes again when the file has not changed:
// the contents are read and hashed (milliseconds), and the remembered set,
// immutable once validated, is the new config's. Two configs then share
// one routes slice, which is also what lets the reload see at once that
// the configuration is unchanged (reflect.DeepEqual stops at a slice
// compared with itself). A few sets are kept: a graph has few route
// tables.
//
// A router has one (CacheOf its elements.GraphState): IPLookup remembers
// its set there when it is built, and the router's reloads load with it.
// Graphs loaded for other routers, or for none, do not see it.
type SetCache struct {
	mu     sync.Mutex
	m      map[routeSetKey]*routeSet
	byStat map[fileID]routeSetKey // a file as stat saw it when hashed
}

// setCacheKey files a graph's SetCache in its GraphState.
type setCacheKey struct{}

func newSetCache() *SetCache {
	return &SetCache{m: map[routeSetKey]*routeSet{}, byStat: map[fileID]routeSetKey{}}
}

// CacheOf returns the SetCache of the graph state s (of one router).
func CacheOf(s *elements.GraphState) *SetCache {
	return elements.StateValue(s, setCacheKey{}, newSetCache)
}

// ContextCache returns the SetCache of the graph ctx belongs to.
func ContextCache(ctx *elements.Context) *SetCache {
	return elements.GraphValue(ctx, setCacheKey{}, newSetCache)
}

// LoadSet is ParseConfig for configurations that are loaded again (a
// reload): a set made from a routes_file that was validated and
// remembered in c before is returned as it was (hit: it was validated by
// Precheck when it was first loaded, and Routes is the slice it had then),
// when the entries, the limit and the file's contents are the same. A nil
// c remembers nothing.
func LoadSet(c *SetCache, entries []string, file string, limit int) (set Set, hit bool, err error) {
	rs, key, hit, err := c.load(entries, file, limit)
	if err != nil {
		return Set{}, false, err
	}
	return Set{rs: rs, key: key}, hit, nil
}

// Routes are the set's routes; they must not be changed.
func (s Set) Routes() []Route { return s.rs.routes }

// Ports is the number of output ports the routes use (the highest Out of
// any path, plus one).
func (s Set) Ports() int { return s.rs.ports() }

// Remember keeps s, which passed validation, for the next LoadSet of the
// same inputs with c (sets without a routes_file are small and not kept).
// A nil c keeps nothing.
func (c *SetCache) Remember(s Set) {
	if c == nil || s.rs == nil || s.key.file == "" {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.m) >= maxRememberedRouteSets {
		for old := range c.m {
			delete(c.m, old)
			break
		}
	}
	c.m[s.key] = s.rs
}

// fileID is a file as stat sees it, with the rest of a set's inputs.
type fileID struct {
	dev, ino     uint64
	size         int64
	mtime, ctime int64
	key          routeSetKey // entries, limit, file name (sum and size zero)
}

const maxRememberedRouteSets = 8

type routeSetKey struct {
	entries uint64 // hash of the routes entries
	n       int
	file    string
	sum     uint64 // hash of the file's contents
	size    int
	limit   int
}

// keySeed seeds the hashes of route set keys. It is set once, at init,
// and never written again: keys are compared only within one process, and
// one seed for all its caches lets a set validated before its router
// existed (forwarder run loads the graph first) be remembered in the
// router's cache under the key its reloads will compute.
var keySeed = maphash.MakeSeed()

// routeSetKeyOf hashes what a set is made of: the entries and the file's
// contents, text (maphash: a few milliseconds for tens of megabytes).
func routeSetKeyOf(entries []string, file, text string, limit int) routeSetKey {
	k := routeSetKey{n: len(entries), file: file, limit: limit, size: len(text)}
	var h maphash.Hash
	h.SetSeed(keySeed)
	for _, e := range entries {
		h.WriteString(e)
		h.WriteByte(0)
	}
	k.entries = h.Sum64()
	k.sum = maphash.String(keySeed, text)
	return k
}

// load returns the remembered set for these inputs (hit), or parses them;
// key is what Remember files a validated set under (zero without a file:
// small sets are not remembered).
func (c *SetCache) load(entries []string, file string, limit int) (rs *routeSet, key routeSetKey, hit bool, err error) {
	if file == "" {
		rs, err = parseRouteSet(entries, file, limit)
		return rs, key, false, err
	}
	// A file whose identity, size and change times are those it had when
	// it was hashed is not read again (ctime moves with every write and
	// cannot be set back).
	id, statOK := fileIdentity(file)
	id.key = routeSetKeyOf(entries, file, "", limit)
	if statOK && c != nil {
		c.mu.Lock()
		k, ok := c.byStat[id]
		rs = c.m[k]
		c.mu.Unlock()
		if ok && rs != nil {
			return rs, k, true, nil
		}
	}
	// Read once: what is hashed is what is parsed.
	text, err := readRoutesFile(file)
	if err != nil {
		return nil, key, false, elements.Errorf("routes_file", "%v", err)
	}
	key = routeSetKeyOf(entries, file, text, limit)
	if c != nil {
		c.mu.Lock()
		rs = c.m[key]
		if statOK {
			if len(c.byStat) >= maxRememberedRouteSets {
				clear(c.byStat)
			}
			c.byStat[id] = key
		}
		c.mu.Unlock()
		if rs != nil {
			return rs, key, true, nil
		}
	}
	rs, err = parseRouteSetText(entries, file, text, limit)
	return rs, key, false, err
}
