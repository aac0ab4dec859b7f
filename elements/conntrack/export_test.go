package conntrack

// EvictProbes is how many entries eviction has looked at.
func (t *Table) EvictProbes() uint64 { return t.evictProbes }
