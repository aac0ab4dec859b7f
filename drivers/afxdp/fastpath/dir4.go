package fastpath

import (
	"encoding/binary"
	"errors"
	"fmt"
	"net/netip"
	"sync"
	"sync/atomic"
	"time"
	"unsafe"

	"github.com/cilium/ebpf"
	"golang.org/x/sys/unix"
)

// The IPv4 route table the programs read: DIR-24-8 (bpf/fastpath.h), as
// the graph's own table (elements/ip/route) is, written in place through
// shared mappings of two BPF arrays.
//
// Why not the kernel's LPM trie, which it was: a trie look-up walks up
// to 32 nodes (a cache miss each in a full table), and every route
// change is a bpf(2) call that allocates or frees a node, freed through
// RCU callbacks; a routing daemon installing or withdrawing a million
// prefixes in its own order spent more of the machine in the trie's
// deletes and their callbacks than in all of the forwarder's own work
// (benchmarks/routing.md). Here a look-up is one or two array loads and
// a change is stores into memory the program reads: no system call, no
// allocation, nothing left for the kernel to free.
//
// The writer keeps, beside the arrays, each entry's depth (its prefix
// length + 1, 0 for none) and the prefixes themselves (a deleted
// prefix's entries go back to the next shorter prefix that covers them,
// found among the prefixes as DPDK's rte_lpm does). A /24 that holds
// longer prefixes gets a group of 256 entries; when the groups run out
// (dir4MaxGroups, or the table's share of them), such a /24 is pinned to
// the slow path instead: its frames go to the graph, whose table has
// every prefix, until its longer prefixes are gone (counted: Pinned).
//
// Nothing a program may still be reading is reused at once: a freed
// group or next hop waits dir4Quarantine before it is handed out again
// (a program's run is microseconds), and a new group is filled before
// the /24 entry that points to it is published (an atomic store: the
// fill is visible first on any CPU).

const (
	dir4Group       = 0x8000                // an entry that names a group
	dir4MaxGroups   = 32760                 // group numbers fit in 15 bits (a multiple of 8: whole pages)
	dir4MaxNexthops = dir4Group - 1         // next-hop ids 1..32767
	dir4Slots24     = 1 << 24               // /24 entries
	dir4GroupSize   = 256                   // entries in a group
	dir4DepthPage   = 4096                  // /24 depths made at a time
	nhSlow          = 1                     // the next hop "take the slow path" (local routes, pinned /24s)
	depthPinned     = 0xff                  // a /24 entry pinned to the slow path
	dir4Quarantine  = 50 * time.Millisecond // before a freed group or next hop is reused
	dir4EntrySize   = int(unsafe.Sizeof(uint16(0)))
	dir4PerElem     = int(unsafe.Sizeof(fastpathDir4Entries{})) / dir4EntrySize
)

// dir4 is the writer of the IPv4 table; safe for concurrent use.
type dir4 struct {
	mu                    sync.Mutex
	tbl24, tbl8, nexthops *ebpf.Map
	mem24, mem8           []byte   // the arrays' shared mappings
	t24, t8               []uint16 // the same, as entries
	// Each entry's depth (prefix length + 1, 0 none), by pages of
	// dir4DepthPage /24s and by group, made on first use: a small
	// table does not pay for a full one's.
	d24                [][]uint8
	d8                 [][]uint8
	long               []uint16          // per group: its prefixes longer than /24
	groups             int               // groups the table has
	rules              map[uint64]uint16 // every prefix (dir4Key) -> its next hop
	lens               [33]int           // prefixes held, by length
	pinned             map[uint32]uint16 // pinned /24 -> its longer prefixes
	freeGroups, freeNH []uint16
	heldGroups, heldNH []heldID
	nextGroup          uint16 // groups never used: nextGroup..groups-1
	nhIDs              map[fastpathRoute]uint16
	nhVals             []fastpathRoute // by id
	nhRefs             []uint32        // prefixes using each id
	nhFallbacks        uint64          // routes given the slow path for want of a next-hop id
	quarantine         time.Duration
}

// heldID is a freed group or next hop and when it was freed.
type heldID struct {
	id uint16
	at time.Time
}

// dir4Groups is how many groups a table of maxRoutes prefixes gets: one
// a prefix up to dir4MaxGroups, whole pages of them.
func dir4Groups(maxRoutes int) int {
	return min(dir4MaxGroups, (max(maxRoutes, 64)+7)/8*8)
}

// newDir4 creates the arrays (zero: no route) and maps them.
func newDir4(maxRoutes int) (*dir4, error) {
	d := &dir4{groups: dir4Groups(maxRoutes), rules: map[uint64]uint16{}, pinned: map[uint32]uint16{},
		nhIDs: map[fastpathRoute]uint16{}, quarantine: dir4Quarantine}
	var err error
	mk := func(name string, entries int) (*ebpf.Map, []byte, error) {
		m, err := newMap(&ebpf.MapSpec{Name: name, Type: ebpf.Array, KeySize: 4, ValueSize: sizeOf[fastpathDir4Entries](),
			MaxEntries: uint32(entries / dir4PerElem), Flags: unix.BPF_F_MMAPABLE})
		if err != nil {
			return nil, nil, fmt.Errorf("fastpath: creating %s: %w", name, err)
		}
		mem, err := unix.Mmap(m.FD(), 0, entries*dir4EntrySize, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED)
		if err != nil {
			m.Close()
			return nil, nil, fmt.Errorf("fastpath: mapping %s: %w", name, err)
		}
		return m, mem, nil
	}
	if d.tbl24, d.mem24, err = mk("fp_tbl24", dir4Slots24); err != nil {
		return nil, err
	}
	if d.tbl8, d.mem8, err = mk("fp_tbl8", d.groups*dir4GroupSize); err != nil {
		d.close()
		return nil, err
	}
	if d.nexthops, err = newMap(&ebpf.MapSpec{Name: "fp_nexthops", Type: ebpf.Array, KeySize: 4,
		ValueSize: sizeOf[fastpathRoute](), MaxEntries: dir4MaxNexthops + 1}); err != nil {
		d.close()
		return nil, fmt.Errorf("fastpath: creating fp_nexthops: %w", err)
	}
	d.t24 = unsafe.Slice((*uint16)(unsafe.Pointer(&d.mem24[0])), dir4Slots24)
	d.t8 = unsafe.Slice((*uint16)(unsafe.Pointer(&d.mem8[0])), d.groups*dir4GroupSize)
	d.d24 = make([][]uint8, dir4Slots24/dir4DepthPage)
	d.d8 = make([][]uint8, d.groups)
	d.long = make([]uint16, d.groups)
	// Ids 0 (no route) and nhSlow are fixed.
	d.nhVals = make([]fastpathRoute, nhSlow+1, 64)
	d.nhRefs = make([]uint32, nhSlow+1, 64)
	d.nhVals[nhSlow] = fastpathRoute{Flags: routeFlagLocal}
	if err := d.nexthops.Put(uint32(nhSlow), &d.nhVals[nhSlow]); err != nil {
		d.close()
		return nil, fmt.Errorf("fastpath: writing fp_nexthops: %w", err)
	}
	return d, nil
}

// close unmaps and closes the arrays; idempotent.
func (d *dir4) close() error {
	d.mu.Lock()
	defer d.mu.Unlock()
	var errs []error
	for _, m := range []*[]byte{&d.mem24, &d.mem8} {
		if *m != nil {
			errs = append(errs, unix.Munmap(*m))
			*m = nil
		}
	}
	d.t24, d.t8 = nil, nil
	return errors.Join(append(errs, d.tbl24.Close(), d.tbl8.Close(), d.nexthops.Close())...)
}

var errDir4Closed = errors.New("fastpath: the route table is closed")

func dir4Key(a uint32, bits int) uint64 { return uint64(a)<<8 | uint64(bits) }

func mask4(bits int) uint32 {
	if bits == 0 {
		return 0
	}
	return ^uint32(0) << (32 - bits)
}

// set adds or replaces p's route (p IPv4 and masked).
func (d *dir4) set(p netip.Prefix, r fastpathRoute) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.setLocked(p, r)
}

// setLocked is set with d.mu held.
func (d *dir4) setLocked(p netip.Prefix, r fastpathRoute) error {
	if d.t24 == nil {
		return errDir4Closed
	}
	a4 := p.Addr().As4()
	a, bits := binary.BigEndian.Uint32(a4[:]), p.Bits()
	id, err := d.nhRef(r)
	if err != nil {
		return err
	}
	key := dir4Key(a, bits)
	old, had := d.rules[key]
	d.rules[key] = id
	if had {
		d.nhUnref(old)
	} else {
		d.lens[bits]++
	}
	dep := uint8(bits + 1)
	if bits <= 24 {
		d.fill24(a>>8, 1<<(24-bits), dep, false, id, dep)
		return nil
	}
	s := a >> 8
	if c, ok := d.pinned[s]; ok {
		if !had {
			d.pinned[s] = c + 1
		}
		return nil
	}
	if d.t24[s]&dir4Group == 0 {
		g, ok := d.allocGroup()
		if !ok {
			// Out of groups: the /24 goes to the slow path whole.
			d.t24[s] = nhSlow
			d.setDepth24(s, depthPinned)
			d.pinned[s] = 1
			return nil
		}
		base, dg := int(g)*dir4GroupSize, d.d8[g]
		if dg == nil {
			dg = make([]uint8, dir4GroupSize)
			d.d8[g] = dg
		}
		e, dep := d.t24[s], d.depth24(s)
		for j := range dir4GroupSize {
			d.t8[base+j], dg[j] = e, dep
		}
		d.publish24(s, dir4Group|g)
	}
	g := d.t24[s] &^ dir4Group
	if !had {
		d.long[g]++
	}
	d.fill8(g, a&0xff, 1<<(32-bits), dep, false, id, dep)
	return nil
}

// del removes p's route, if held.
func (d *dir4) del(p netip.Prefix) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.delLocked(p)
}

// delLocked is del with d.mu held.
func (d *dir4) delLocked(p netip.Prefix) error {
	if d.t24 == nil {
		return errDir4Closed
	}
	a4 := p.Addr().As4()
	a, bits := binary.BigEndian.Uint32(a4[:]), p.Bits()
	key := dir4Key(a, bits)
	id, had := d.rules[key]
	if !had {
		return nil
	}
	delete(d.rules, key)
	d.lens[bits]--
	d.nhUnref(id)
	dep := uint8(bits + 1)
	pid, pdep := d.covering(a, bits)
	if bits <= 24 {
		d.fill24(a>>8, 1<<(24-bits), dep, true, pid, pdep)
		return nil
	}
	s := a >> 8
	if c, ok := d.pinned[s]; ok {
		if c > 1 {
			d.pinned[s] = c - 1
			return nil
		}
		delete(d.pinned, s)
		// No longer prefix is left: the /24 takes its covering route.
		id, dep := d.covering(s<<8, 25)
		d.t24[s] = id
		d.setDepth24(s, dep)
		return nil
	}
	g := d.t24[s] &^ dir4Group
	d.fill8(g, a&0xff, 1<<(32-bits), dep, true, pid, pdep)
	if d.long[g]--; d.long[g] == 0 {
		// Every entry now holds the /24's covering route: the group
		// goes, the /24 entry takes the route.
		base := int(g) * dir4GroupSize
		d.t24[s] = d.t8[base]
		d.setDepth24(s, d.d8[g][0])
		d.freeGroup(g)
	}
	return nil
}

// covering is the next hop and depth of the longest prefix shorter than
// bits that covers a: what a's entries hold once a/bits is gone.
func (d *dir4) covering(a uint32, bits int) (uint16, uint8) {
	for l := bits - 1; l >= 0; l-- {
		if d.lens[l] == 0 {
			continue
		}
		if id, ok := d.rules[dir4Key(a&mask4(l), l)]; ok {
			return id, uint8(l + 1)
		}
	}
	return 0, 0
}

// fill24 gives the /24 entries [s0, s0+n) of depth at most od (a
// prefix set: exact false) or exactly od (a prefix deleted: exact true)
// the next hop id and depth nd; in a /24 with a group, the group's
// entries. Pinned /24s are left to del's recount.
func (d *dir4) fill24(s0, n uint32, od uint8, exact bool, id uint16, nd uint8) {
	for s := s0; s < s0+n; s++ {
		e, cur := d.t24[s], d.depth24(s)
		switch {
		case e&dir4Group != 0:
			d.fill8(e&^dir4Group, 0, dir4GroupSize, od, exact, id, nd)
		case cur != depthPinned && (cur == od || !exact && cur < od):
			d.t24[s] = id
			d.setDepth24(s, nd)
		}
	}
}

// fill8 is fill24 for group g's entries [j0, j0+n).
func (d *dir4) fill8(g uint16, j0, n uint32, od uint8, exact bool, id uint16, nd uint8) {
	base, dg := uint32(g)*dir4GroupSize, d.d8[g]
	for j := j0; j < j0+n; j++ {
		if cur := dg[j]; cur == od || !exact && cur < od {
			d.t8[base+j], dg[j] = id, nd
		}
	}
}

// depth24 is /24 entry s's depth.
func (d *dir4) depth24(s uint32) uint8 {
	if pg := d.d24[s/dir4DepthPage]; pg != nil {
		return pg[s%dir4DepthPage]
	}
	return 0
}

// setDepth24 sets /24 entry s's depth, making its page if need be.
func (d *dir4) setDepth24(s uint32, dep uint8) {
	pg := d.d24[s/dir4DepthPage]
	if pg == nil {
		if dep == 0 {
			return
		}
		pg = make([]uint8, dir4DepthPage)
		d.d24[s/dir4DepthPage] = pg
	}
	pg[s%dir4DepthPage] = dep
}

// publish24 stores v in /24 entry s after every store before it, on
// any CPU: an atomic store of the aligned word that holds the entry
// (the writer is the only one, so its other half is stored unchanged).
func (d *dir4) publish24(s uint32, v uint16) {
	w := s &^ 1
	p := (*uint32)(unsafe.Pointer(&d.t24[w]))
	lo, hi := d.t24[w], d.t24[w+1]
	if s == w {
		lo = v
	} else {
		hi = v
	}
	var b [4]byte
	binary.NativeEndian.PutUint16(b[0:], lo)
	binary.NativeEndian.PutUint16(b[2:], hi)
	atomic.StoreUint32(p, binary.NativeEndian.Uint32(b[:]))
}

// allocGroup returns a group to fill, if one is free.
func (d *dir4) allocGroup() (uint16, bool) {
	d.freeGroups, d.heldGroups = reclaim(d.freeGroups, d.heldGroups, d.quarantine)
	if n := len(d.freeGroups); n > 0 {
		g := d.freeGroups[n-1]
		d.freeGroups = d.freeGroups[:n-1]
		return g, true
	}
	if int(d.nextGroup) < d.groups {
		d.nextGroup++
		return d.nextGroup - 1, true
	}
	return 0, false
}

func (d *dir4) freeGroup(g uint16) {
	d.heldGroups = append(d.heldGroups, heldID{g, time.Now()})
}

// reclaim moves the held ids freed at least q ago to free.
func reclaim(free []uint16, held []heldID, q time.Duration) ([]uint16, []heldID) {
	if len(held) == 0 {
		return free, held
	}
	now := time.Now()
	n := 0
	for n < len(held) && now.Sub(held[n].at) >= q {
		free = append(free, held[n].id)
		n++
	}
	if n == 0 {
		return free, held
	}
	return free, append(held[:0], held[n:]...)
}

// nhRef returns the next-hop id of r, adding it if new, and counts one
// more prefix using it. Local routes share nhSlow; with every id taken,
// a route gets nhSlow as well (its frames take the slow path; counted).
func (d *dir4) nhRef(r fastpathRoute) (uint16, error) {
	if r.Flags&routeFlagLocal != 0 {
		return nhSlow, nil
	}
	if id, ok := d.nhIDs[r]; ok {
		d.nhRefs[id]++
		return id, nil
	}
	d.freeNH, d.heldNH = reclaim(d.freeNH, d.heldNH, d.quarantine)
	var id uint16
	if n := len(d.freeNH); n > 0 {
		id = d.freeNH[n-1]
		d.freeNH = d.freeNH[:n-1]
	} else if len(d.nhVals) <= dir4MaxNexthops {
		id = uint16(len(d.nhVals))
		d.nhVals = append(d.nhVals, fastpathRoute{})
		d.nhRefs = append(d.nhRefs, 0)
	} else {
		d.nhFallbacks++
		return nhSlow, nil
	}
	// Written before any entry names it (the system call orders it).
	if err := d.nexthops.Put(uint32(id), &r); err != nil {
		d.freeNH = append(d.freeNH, id)
		return 0, fmt.Errorf("fastpath: writing fp_nexthops: %w", err)
	}
	d.nhIDs[r] = id
	d.nhVals[id] = r
	d.nhRefs[id] = 1
	return id, nil
}

func (d *dir4) nhUnref(id uint16) {
	if id == nhSlow {
		return
	}
	if d.nhRefs[id]--; d.nhRefs[id] == 0 {
		delete(d.nhIDs, d.nhVals[id])
		d.heldNH = append(d.heldNH, heldID{id, time.Now()})
	}
}

// lookup is the route for a as the programs find it (tests, tools).
func (d *dir4) lookup(a netip.Addr) (fastpathRoute, bool) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.t24 == nil || !a.Is4() {
		return fastpathRoute{}, false
	}
	a4 := a.As4()
	v := binary.BigEndian.Uint32(a4[:])
	e := d.t24[v>>8]
	if e&dir4Group != 0 {
		e = d.t8[uint32(e&^dir4Group)*dir4GroupSize|v&0xff]
	}
	if e == 0 {
		return fastpathRoute{}, false
	}
	return d.nhVals[e], true
}

// Dir4Use is how full the IPv4 table is.
type Dir4Use struct {
	Prefixes  int // prefixes held
	Groups    int // /24s with longer prefixes, each a group of 256 entries
	MaxGroups int
	Nexthops  int // distinct next hops (ids in use)
	// Pinned /24s go to the slow path whole for want of a group;
	// Fallbacks are routes given to the slow path for want of a
	// next-hop id.
	Pinned, Fallbacks int
}

func (d *dir4) use() Dir4Use {
	d.mu.Lock()
	defer d.mu.Unlock()
	return Dir4Use{Prefixes: len(d.rules), Groups: int(d.nextGroup) - len(d.freeGroups) - len(d.heldGroups), MaxGroups: d.groups,
		Nexthops: len(d.nhIDs), Pinned: len(d.pinned), Fallbacks: int(d.nhFallbacks)}
}
