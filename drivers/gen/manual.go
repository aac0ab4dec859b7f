package gen

import (
	"strconv"

	"github.com/junction-dataplane/junction/conf"
)

// manual is the driver's manual page (forwarder drivers gen).
func manual() conf.Doc {
	return conf.Doc{
		Summary: "synthetic IPv4 or IPv6 traffic without a kernel, and a counting sink",
		Text: `RX: each queue builds Ethernet/IPv4/UDP (or TCP, or ICMP echo) frames from one template built at open (valid IPv4 and L4 checksums), rewriting per packet only the destination address, the source address and the source port (and the destination port when dport is a range), and patching both checksums incrementally (RFC 1624).

TX: every packet transmitted to a gen device is counted and freed, so a gen device used only by ToDevice is a sink. That is normal.

Address ranges: a /30 or shorter prefix means its hosts (network and broadcast addresses left out); /31 and /32 mean every address.

IPv6: when src or dst is an IPv6 address or prefix (both must then be IPv6; src defaults to 2001:2::1, RFC 5180's benchmarking range), the frames are Ethernet/IPv6/UDP (or TCP): size 62..1514 for udp, 74..1514 for tcp. Addresses vary in their low 32 bits only (a prefix shorter than /96 gives its first 2^32 addresses; the all-zeros host is left out).`,
		Queues: `As many RX queues as the queues key says (default: one per worker); RX queue q is served by worker q mod workers. Each has its own pool of ` + strconv.Itoa(PoolSize) + ` packets (made when it first receives) and its own PRNG, and sends its share of count and rate. With split_flows the queues share the flows out as RSS would and the device promises flow affinity. TX: any worker, counted per worker.`,
		Keys: []conf.Key{
			{Name: "count", Type: "int", Default: "0", Doc: "total packets over all queues; 0 = endless. Queue q sends count/queues (the first count%queues queues one more) and is then drained."},
			{Name: "rate", Type: "float", Default: "0", Doc: "packets/s over all queues (a float is fine); 0 = as fast as possible. Each queue gets an equal share, enforced by a token bucket read once per batch. A queue that was not polled for a while catches up on up to 10 ms (at least one batch) of packets."},
			{Name: "size", Type: "int", Default: strconv.Itoa(DefaultSize), Doc: "frame bytes without FCS, 42..1514 for udp and icmp, 54..1514 for tcp; the payload is zeros."},
			{Name: "src", Type: "address or prefix", Default: strconv.Quote(DefaultSrc), Doc: "IPv4 address or CIDR the source addresses come from (see flows)."},
			{Name: "dst", Type: "address, prefix or range", Default: strconv.Quote(DefaultDst), Doc: "IPv4 address, CIDR or FIRST-LAST range (10.0.0.0-10.18.255.255); each packet's destination is drawn uniformly from it, independently of its flow."},
			{Name: "flows", Type: "int", Default: "1", Doc: "number of distinct (source address, source port) pairs. Flow i has source address src[i mod N] (N = addresses in src) and source port sport's first + i/N, always the same (flows ≤ N × ports in sport); each packet picks its flow uniformly at random. With a single dst address that is exactly flows distinct 5-tuples; with a dst range the destinations vary within each flow. Set flows ≥ N to use every src address."},
			{Name: "split_flows", Type: "bool", Default: "false", Doc: "true: the queues share the flows out as a NIC's RSS gives each flow to one queue: queue q sends only flows q, q+Q, q+2Q, … (Q queues), so no flow reaches two workers and FromDevice hands nothing to another worker (the device promises flow affinity). false: every queue draws from all flows, and with several workers FromDevice hands each packet to its flow's owner."},
			{Name: "proto", Type: "string", Default: strconv.Quote(DefaultProto), Doc: `"udp", "tcp" (TCP segments have only ACK set, seq 1, ack 1, window 65535) or "icmp" (echo requests, sequence 1; the flow's source port is the echo identifier).`},
			{Name: "sport", Type: "port or range", Default: strconv.Quote(DefaultSport), Doc: `the flows' source ports: a port (int or string) or a range "LO-HI".`},
			{Name: "dport", Type: "port or range", Default: strconv.Itoa(DstPort), Doc: `the destination port (TCP, UDP): a port (dport = 23) or a range "LO-HI", each packet's drawn uniformly from it like its destination address. Not for icmp.`},
			{Name: "queues", Type: "int", Default: "0", Doc: "RX queues, 0.." + strconv.Itoa(MaxQueues) + "; 0 = one per worker."},
			{Name: "seed", Type: "int", Default: strconv.Itoa(DefaultSeed), Doc: "PRNG seed; the same seed gives the same packets on each queue."},
			{Name: "src_mac", Type: "MAC", Default: strconv.Quote(DefaultSrcMAC), Doc: "source MAC of the generated frames."},
			{Name: "dst_mac", Type: "MAC", Default: "device mac", Doc: "destination MAC; defaults to the device's mac key, else " + DefaultDstMAC + " (which is then also the device's own MAC)."},
			{Name: "sequence", Type: "bool", Default: "false", Doc: "true (udp only): the first 10 bytes of each frame's UDP payload number it: the queue (2 bytes) and the packet's sequence number on that queue (8 bytes, from 0), big endian, so that a test can check loss, duplication and order; the UDP checksum is then 0 (none, as IPv4 allows). SeqOffset is where it starts."},
		},
		Stats: `rx_packets, rx_bytes, tx_packets, tx_bytes, rx_pool_empty (batches cut short because the queue's pool of ` + strconv.Itoa(PoolSize) + ` packets was empty: the graph holds too many packets; the packets are made later, so it is not a loss).`,
		Example: `[devices.lan]
driver = "gen"
dst    = "10.2.0.0/16"
flows  = 1024
size   = 64
rate   = 1e6
count  = 10000000

# telnet attempts, to benchmark a firewall rule on port 23
[devices.wan]
driver = "gen"
proto  = "tcp"
dport  = 23
sport  = "32768-60999"
flows  = 4096`,
		SeeAlso: "pcap (replaying captures), FromDevice, ToDevice",
	}
}
