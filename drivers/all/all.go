// Package all registers every standard driver; import it for its side
// effects.
package all

import (
	_ "github.com/junction-dataplane/junction/drivers/gen"
	_ "github.com/junction-dataplane/junction/drivers/pcap"
)
