package pcap

import "github.com/junction-dataplane/junction/drivers"

var _ drivers.Directional = (*Config)(nil)

// Directions implements drivers.Directional: a device receives from its
// read file and transmits to its write file.
func (c *Config) Directions() (receive, transmit bool) { return c.Read != "", c.Write != "" }
