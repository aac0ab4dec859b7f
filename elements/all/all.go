package all

import (
	_ "github.com/junction-dataplane/junction/elements/arp"
	_ "github.com/junction-dataplane/junction/elements/classifier"
	_ "github.com/junction-dataplane/junction/elements/conntrack"
	_ "github.com/junction-dataplane/junction/elements/devices"
	_ "github.com/junction-dataplane/junction/elements/ethernet"
	_ "github.com/junction-dataplane/junction/elements/fasttrack"
	_ "github.com/junction-dataplane/junction/elements/host"
	_ "github.com/junction-dataplane/junction/elements/icmp"
	_ "github.com/junction-dataplane/junction/elements/ip"
	_ "github.com/junction-dataplane/junction/elements/ipfrag"
	_ "github.com/junction-dataplane/junction/elements/nat"
	_ "github.com/junction-dataplane/junction/elements/ndp"
	_ "github.com/junction-dataplane/junction/elements/qos"
	_ "github.com/junction-dataplane/junction/elements/standard"
	_ "github.com/junction-dataplane/junction/elements/vlan"
)
