package route

import (
	"fmt"
	"slices"
)

// Next-hop sets: the writer interns each route's list of equal-cost
// paths (fib.go) once, and versions refer to it by index.

func nhKey(hops []Hop) string {
	b := make([]byte, 0, len(hops)*19)
	for _, h := range hops {
		a := h.Via.As16()
		b = append(b, a[:]...)
		if h.Via.IsValid() {
			b = append(b, 1)
		} else {
			b = append(b, 0)
		}
		b = append(b, byte(h.Out>>8), byte(h.Out))
	}
	return string(b)
}

// nhRef returns the value (index+1) of the set hops, adding it if new, and
// counts one more route using it.
func (w *writerState) nhRef(hops []Hop) (uint16, error) {
	if len(hops) == 1 {
		// The common case, without building a key string.
		if v, ok := w.nhIndex1[hops[0]]; ok {
			w.nhRefs[v-1]++
			return v, nil
		}
	}
	k := nhKey(hops)
	if v, ok := w.nhIndex[k]; ok {
		w.nhRefs[v-1]++
		return v, nil
	}
	set := nhSet{hops: slices.Clone(hops)}
	var i int
	if n := len(w.nhFree); n > 0 {
		i = int(w.nhFree[n-1])
		w.nhFree = w.nhFree[:n-1]
		if i < w.nhPub && !w.nhCopied {
			// A published version may still read slot i: give the
			// next version its own copy of the array.
			w.nh = slices.Clone(w.nh)
			w.nhCopied = true
		}
		w.nh[i] = set
		w.nhRefs[i] = 1
	} else {
		if len(w.nh) >= MaxNextHopSets {
			return 0, fmt.Errorf("%w: more than %d distinct next-hop sets", errTableFull, MaxNextHopSets)
		}
		i = len(w.nh)
		w.nh = append(w.nh, set)
		w.nhRefs = append(w.nhRefs, 1)
	}
	w.nhIndex[k] = uint16(i + 1)
	if len(hops) == 1 {
		w.nhIndex1[hops[0]] = uint16(i + 1)
	}
	return uint16(i + 1), nil
}

func (w *writerState) nhUnref(v uint16) {
	i := int(v - 1)
	w.nhRefs[i]--
	if w.nhRefs[i] == 0 {
		delete(w.nhIndex, nhKey(w.nh[i].hops))
		if len(w.nh[i].hops) == 1 {
			delete(w.nhIndex1, w.nh[i].hops[0])
		}
		w.nhFree = append(w.nhFree, uint16(i))
	}
}
