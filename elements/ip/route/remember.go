package route

import (
	"hash/maphash"
	"sync"

	"github.com/junction-dataplane/junction/elements"
)

// Set is a routes configuration as LoadSet read it: parsed, possibly
// validated already.
type Set struct {
	rs  *routeSet
	key routeSetKey
	// Hit says the set was remembered: it was validated (Precheck)
	// when it was first loaded, and Routes is the slice it had then.
	Hit bool
}

// LoadSet is ParseConfig for configurations that are loaded again (a
// reload): a set made from a routes_file that was validated and
// Remembered before is returned as it was (Hit), when the entries, the
// limit and the file's contents are the same.
func LoadSet(entries []string, file string, limit int) (*Set, error) {
	rs, key, hit, err := cachedRouteSet(entries, file, limit)
	if err != nil {
		return nil, err
	}
	return &Set{rs: rs, key: key, Hit: hit}, nil
}

// Routes are the set's routes; they must not be changed.
func (s *Set) Routes() []Route { return s.rs.routes }

// Ports is the number of output ports the routes use (the highest Out of
// any path, plus one).
func (s *Set) Ports() int { return s.rs.ports() }

// Remember keeps a set that passed validation for the next LoadSet of the
// same inputs (sets without a routes_file are small and not kept).
func (s *Set) Remember() { rememberRouteSet(s.key, s.rs) }

// Validated route sets are remembered by what they were made from (the
// routes entries, the routes_file's name and a hash of its contents, the
// limit), so that loading a graph again, as a reload does, does not parse
// and check a million routes again when the file has not changed: the
// contents are read and hashed (milliseconds), and the remembered set,
// immutable once validated, is the new config's. Two configs then share
// one routes slice, which is also what lets the reload see at once that
// the configuration is unchanged (reflect.DeepEqual stops at a slice
// compared with itself). A few sets are kept: a graph has few route tables.
// It is a cache, not state graphs share: a set is immutable once
// validated and found only by its inputs, so a graph given a remembered
// set has exactly the routes it would have parsed.
var routeSets struct {
	sync.Mutex
	seed   maphash.Seed
	m      map[routeSetKey]*routeSet
	byStat map[fileID]routeSetKey // a file as stat saw it when hashed
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

// routeSetKeyOf hashes what a set is made of: the entries and the file's
// contents, text.
func routeSetKeyOf(entries []string, file, text string, limit int) routeSetKey {
	routeSets.Lock()
	if routeSets.m == nil {
		routeSets.seed = maphash.MakeSeed()
		routeSets.m = map[routeSetKey]*routeSet{}
		routeSets.byStat = map[fileID]routeSetKey{}
	}
	seed := routeSets.seed
	routeSets.Unlock()
	k := routeSetKey{n: len(entries), file: file, limit: limit, size: len(text)}
	var h maphash.Hash
	h.SetSeed(seed)
	for _, e := range entries {
		h.WriteString(e)
		h.WriteByte(0)
	}
	k.entries = h.Sum64()
	k.sum = maphash.String(seed, text)
	return k
}

// cachedRouteSet returns the remembered set for these inputs (hit), or
// parses them; key is what rememberRouteSet files a validated set under
// (zero without a file: small sets are not remembered).
func cachedRouteSet(entries []string, file string, limit int) (rs *routeSet, key routeSetKey, hit bool, err error) {
	if file == "" {
		rs, err = parseRouteSet(entries, file, limit)
		return rs, key, false, err
	}
	// A file whose identity, size and change times are those it had when
	// it was hashed is not read again (ctime moves with every write and
	// cannot be set back).
	id, statOK := fileIdentity(file)
	id.key = routeSetKeyOf(entries, file, "", limit)
	if statOK {
		routeSets.Lock()
		k, ok := routeSets.byStat[id]
		rs = routeSets.m[k]
		routeSets.Unlock()
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
	routeSets.Lock()
	rs = routeSets.m[key]
	if statOK {
		if len(routeSets.byStat) >= maxRememberedRouteSets {
			clear(routeSets.byStat)
		}
		routeSets.byStat[id] = key
	}
	routeSets.Unlock()
	if rs != nil {
		return rs, key, true, nil
	}
	rs, err = parseRouteSetText(entries, file, text, limit)
	return rs, key, false, err
}

// rememberRouteSet keeps a validated set made from a routes_file.
func rememberRouteSet(key routeSetKey, rs *routeSet) {
	if key.file == "" {
		return
	}
	routeSets.Lock()
	defer routeSets.Unlock()
	if len(routeSets.m) >= maxRememberedRouteSets {
		for old := range routeSets.m {
			delete(routeSets.m, old)
			break
		}
	}
	routeSets.m[key] = rs
}
