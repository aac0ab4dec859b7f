package kernelmirror

import (
	"math/rand/v2"
	"net/netip"
	"sync/atomic"
	"testing"

	"github.com/junction-dataplane/junction/elements/ip/route"
	"golang.org/x/sys/unix"
)

// followFixture is a mirror without a socket (routes through ifindex 1
// go out of port 0) and the decoded events of n IPv4 /24s via one
// gateway, announced (adds) and withdrawn (dels), eventBatch a batch.
type followFixture struct {
	k          *Sync
	adds, dels []*eventBatchBuf
	s          routeScratch
	spread     bool
}

// addr is the fixture's i-th /24.
func (f *followFixture) addr(i int) []byte {
	if f.spread {
		a := uint32(i) << 14
		return []byte{byte(a >> 24), byte(a >> 16), byte(a >> 8), 0}
	}
	return []byte{10 + byte(i>>16), byte(i >> 8), byte(i), 0}
}

func newFollowFixture(t testing.TB, n int) *followFixture {
	return newFollowFixtureOrder(t, n, func(i int) int { return i }, false)
}

// newFollowFixtureOrder is newFollowFixture with the i-th event naming
// prefix order(i); spread: the prefixes 64 /24s apart, over the whole
// address space (as a full table's are), instead of one after another.
func newFollowFixtureOrder(t testing.TB, n int, order func(int) int, spread bool) *followFixture {
	tab, err := route.NewTable(nil)
	if err != nil {
		t.Fatal(err)
	}
	f := &followFixture{k: &Sync{t: tab, opt: Options{Table: unix.RT_TABLE_MAIN}, pending: newTouchedSet(),
		routes: newPrefixMap(0, 0), multi: map[netip.Prefix][]kernelRoute{}, other: map[otherKey]uint8{},
		ports: map[int]int{1: 0}, applied: new(atomic.Uint64), skipped: new(atomic.Uint64)}, spread: spread}
	batch := func(add bool, from int) *eventBatchBuf {
		bb := &eventBatchBuf{ev: make([]routeEvent, 0, eventBatch)}
		for j := from; j < min(from+eventBatch, n); j++ {
			i := order(j)
			ev := routeEvent{add: add, family: unix.AF_INET, typ: unix.RTN_UNICAST, dstLen: 24, hasDst: true,
				gwLen: 4, table: unix.RT_TABLE_MAIN, oif: 1}
			copy(ev.dst[:], f.addr(i))
			copy(ev.gw[:], []byte{192, 0, 2, 1})
			bb.ev = append(bb.ev, ev)
		}
		return bb
	}
	for i := 0; i < n; i += eventBatch {
		f.adds, f.dels = append(f.adds, batch(true, i)), append(f.dels, batch(false, i))
	}
	return f
}

// follow notes the batches as the run loop does, publishing every
// maxBurst prefixes and at the end.
func (f *followFixture) follow(bs []*eventBatchBuf) {
	for _, bb := range bs {
		f.k.noteBurst(bb, &f.s)
		if f.k.pending.len() >= maxBurst {
			f.k.flush()
		}
	}
	f.k.flush()
}

// TestNoteAllocs: noting a route event allocates nothing once the maps
// have grown (a full table is a million events; two allocations each
// were 40 MB of garbage a million).
func TestNoteAllocs(t *testing.T) {
	f := newFollowFixture(t, eventBatch)
	f.follow(f.adds)
	f.follow(f.dels)
	allocs := testing.AllocsPerRun(20, func() {
		f.k.noteBurst(f.adds[0], &f.s)
		f.k.pending.clear()
		f.k.noteBurst(f.dels[0], &f.s)
		f.k.pending.clear()
	})
	if per := allocs / float64(2*eventBatch); per > 0.01 {
		t.Errorf("%.0f allocations for %d events (%.3f an event)", allocs, 2*eventBatch, per)
	}
}

// BenchmarkFollowKernel: the mirror's user-space work for route events as
// a routing daemon's full table brings them (decoded events, no socket):
// 200,000 IPv4 /24s via one gateway announced and then withdrawn, noted a
// batch of eventBatch events at a time and published every maxBurst
// prefixes, the table's writes included (the mirror's own maps, the
// pending set, Table.Apply); ns/change is per route event.
func BenchmarkFollowKernel(b *testing.B) {
	const n = 200000
	b.Run("order=sequential", func(b *testing.B) { benchFollow(b, newFollowFixture(b, n), n) })
	// A routing daemon's order: prefixes spread over the address space
	// and in no order, each burst touching most of the table's pages.
	perm := rand.New(rand.NewPCG(1, 2)).Perm(n)
	b.Run("order=random", func(b *testing.B) {
		benchFollow(b, newFollowFixtureOrder(b, n, func(i int) int { return perm[i] }, true), n)
	})
}

func benchFollow(b *testing.B, f *followFixture, n int) {
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		f.follow(f.adds)
		f.follow(f.dels)
	}
	b.StopTimer()
	if tab := f.k.t; tab.Len() != 0 || f.k.routes.len() != 0 {
		b.Fatalf("after the withdrawal the table holds %d routes, the mirror %d", tab.Len(), f.k.routes.len())
	}
	if got := f.k.applied.Load(); got != uint64(2*n*b.N) {
		b.Fatalf("%d changes applied, want %d", got, 2*n*b.N)
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(2*n*b.N), "ns/change")
}
