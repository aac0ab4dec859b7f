package conntrack

// EvictProbes is how many entries eviction has looked at.
func (t *Table) EvictProbes() uint64 { return t.evictProbes }

// Find6 looks tuple k up in the IPv6 table (an expired flow is absent).
func (t *Table6) Find6(k *Tuple6) (*Conn6, bool) {
	idx, _, ok := t.find(k, nanotime())
	if !ok {
		return nil, false
	}
	return &t.conns[idx], true
}

// CheckMemory is what New checks of a config for workers workers.
func CheckMemory(c *Config, workers int) error { return c.checkMemory(workers) }
