package nat

import (
	"math/rand/v2"
	"testing"
)

// TestEPIndex churns an index of 512 ports' mappings against a map:
// endpoints (a few addresses and ports, so that runs of slots collide
// and deletions shift) put, looked up and deleted at random; after each
// step every endpoint's answer matches the map's. It fails when the
// outside port is not kept in the slot with its endpoint, or when a
// deletion's backward shift loses an endpoint.
func TestEPIndex(t *testing.T) {
	mem := newHugeMem(epIndexBytes(512))
	defer mem.free()
	var x epIndex
	x.init(mem, 512)
	rng := rand.New(rand.NewPCG(1, 2))
	want := map[uint64]uint16{}
	var keys []uint64
	for a := range 8 {
		for p := range 96 {
			keys = append(keys, endpointKey(0x0a000000+uint32(a), uint16(p)*677))
		}
	}
	keys = append(keys, endpointKey(0, 0)) // 0.0.0.0:0 too
	for step := range 20_000 {
		k := keys[rng.IntN(len(keys))]
		switch _, ok := want[k]; {
		case !ok && len(want) < 512:
			v := uint16(1 + rng.IntN(65535))
			x.put(k, v)
			want[k] = v
		case ok && rng.IntN(3) == 0:
			v := uint16(1 + rng.IntN(65535))
			x.put(k, v) // a new port for the same endpoint
			want[k] = v
		case ok:
			x.del(k)
			delete(want, k)
		}
		if step%97 != 0 {
			if v, ok := x.get(k); ok != (want[k] != 0) || v != want[k] {
				t.Fatalf("step %d: %#x gives %d %v, want %d", step, k, v, ok, want[k])
			}
			continue
		}
		n := 0
		for _, k := range keys {
			v, ok := x.get(k)
			if w, in := want[k]; ok != in || v != w {
				t.Fatalf("step %d: %#x gives %d %v, want %d %v", step, k, v, ok, w, in)
			}
			if ok {
				n++
			}
		}
		used := 0
		for _, v := range x.slots {
			if v != 0 {
				used++
			}
		}
		if used != n {
			t.Fatalf("step %d: %d slots used for %d endpoints", step, used, n)
		}
	}
}
