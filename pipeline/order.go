package pipeline

// GraphOrder returns the indexes of g's elements in the order a reader
// follows the graph: the sources first (in declaration order), then every
// element once all the elements feeding it are listed (Kahn's algorithm,
// first come first listed), so that a table reads from receive to
// transmit. Elements no source reaches come last, in declaration order.
func GraphOrder(g *Graph) []int {
	idx := make(map[string]int, len(g.Elements))
	for i, e := range g.Elements {
		idx[e.Name] = i
	}
	next := make([][]int, len(g.Elements))
	indeg := make([]int, len(g.Elements))
	for _, l := range g.Links {
		f, ok1 := idx[l.From]
		t, ok2 := idx[l.To]
		if ok1 && ok2 {
			next[f] = append(next[f], t)
			indeg[t]++
		}
	}
	order := make([]int, 0, len(g.Elements))
	listed := make([]bool, len(g.Elements))
	var queue []int
	for i, e := range g.Elements {
		if e.Type != nil && e.Type.Source {
			queue = append(queue, i)
			listed[i] = true
		}
	}
	for len(queue) > 0 {
		i := queue[0]
		queue = queue[1:]
		order = append(order, i)
		for _, j := range next[i] {
			if indeg[j]--; indeg[j] == 0 && !listed[j] {
				listed[j] = true
				queue = append(queue, j)
			}
		}
	}
	for i := range g.Elements {
		if !listed[i] {
			order = append(order, i)
		}
	}
	return order
}
