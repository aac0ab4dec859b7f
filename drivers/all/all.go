package all

import (
	_ "github.com/junction-dataplane/junction/drivers/afpacket"
	_ "github.com/junction-dataplane/junction/drivers/afxdp"
	_ "github.com/junction-dataplane/junction/drivers/gen"
	_ "github.com/junction-dataplane/junction/drivers/pcap"
	_ "github.com/junction-dataplane/junction/drivers/tap"
)
