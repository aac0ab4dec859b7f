package afpacket

// LinkInterface implements drivers.Linked: forwarder check and run compare
// the rate limits of the graph with the interface's link speed.
func (c *Config) LinkInterface() string { return c.Interface }
