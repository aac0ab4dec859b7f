package graphfile

import (
	"fmt"
	"runtime"

	"github.com/junction-dataplane/junction/elements"
)

// checkMemory adds up what the elements' tables take in every worker
// (elements.MemoryUser: Conntrack's capacity) and refuses a graph beyond
// elements.MemoryBudget, at the element that asks for the most: run would
// otherwise take the machine's memory and end in the runtime's "out of
// memory" (or the kernel's OOM killer) while it builds the workers.
func checkMemory(g *Graph, workers int) []error {
	if workers <= 0 {
		workers = runtime.NumCPU()
	}
	budget, what := elements.MemoryBudget()
	if budget == 0 {
		return nil
	}
	var total uint64
	var big *Element
	var bigBytes uint64
	var bigKey string
	n := 0
	for _, e := range g.Elements {
		m, ok := e.Config.(elements.MemoryUser)
		if !ok || e.Type == nil {
			continue
		}
		b, key := m.MemoryPerWorker()
		total += b
		n++
		if big == nil || b > bigBytes {
			big, bigBytes, bigKey = e, b, key
		}
	}
	if big == nil || total*uint64(workers) <= budget {
		return nil
	}
	others := ""
	if n > 1 {
		others = fmt.Sprintf(" (%d elements' tables)", n)
	}
	return []error{fmt.Errorf("%s: element %q (%s): key %q: the graph's tables%s take %s a worker × %d workers = %s: more than %s, half of %s (this element's: %s a worker)",
		big.Pos, big.Name, big.Type.Name, bigKey, others, elements.FormatBytes(total), workers,
		elements.FormatBytes(total*uint64(workers)), elements.FormatBytes(budget), what, elements.FormatBytes(bigBytes))}
}
