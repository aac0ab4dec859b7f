package pcap

import (
	"strconv"

	"github.com/junction-dataplane/junction/conf"
)

// manual is the driver's manual page (forwarder drivers pcap).
func manual() conf.Doc {
	return conf.Doc{
		Summary: "frames read from and written to pcap files (gopacket pcapgo, pure Go)",
		Text: `A device needs read, write or both (forwarder check warns about a FromDevice of a device with no read file and a ToDevice of one with no write file).

Frames longer than a packet buffer holds (` + strconv.Itoa(maxFrame) + ` bytes) are skipped and counted as oversize. A truncated or corrupt file stops the reading (the queue drains) and is counted in read_errors and logged once; frames before it are delivered. Packets transmitted to a device without write are freed and counted in tx_dropped.`,
		Queues: `One RX queue (the read file), served by one worker, with a pool of ` + strconv.Itoa(PoolSize) + ` packets made when the device first reads; it is drained at the end of the file unless loop is set. TX: any worker; each batch is written whole, under a lock.`,
		Keys: []conf.Key{
			{Name: "read", Type: "path", Doc: "pcap file to receive from (Ethernet link type; plain or gzip-compressed pcap, not pcapng): a regular file, or a symbolic link to one; a FIFO, a device or a directory is refused (forwarder check too), so that opening and reading it always ends. A relative path is resolved against the graph file's directory."},
			{Name: "loop", Type: "bool", Default: "false", Doc: "restart read at the start of the file at its end, so the file replays forever. A file that yields no packet in a whole pass (empty, or only unusable frames) is drained instead of spinning."},
			{Name: "write", Type: "path", Doc: "pcap file every transmitted packet is written to (created, or a file of that name replaced: a new file is renamed over it, so the old one is never truncated nor written through a hard link; a symbolic link, a FIFO, a device, the read file, or, in a sticky directory such as /tmp, another user's file is refused, by forwarder check too; Ethernet, snaplen " + strconv.Itoa(Snaplen) + ", microsecond timestamps taken when a batch is written). Relative paths as for read. Several workers may transmit to one device: each batch is written whole, under a lock."},
		},
		Stats: `rx_packets, rx_bytes, tx_packets, tx_bytes, read_errors (a truncated or corrupt read file), oversize (frames too long for a packet buffer, skipped: a loss), rx_pool_empty (batches cut short: no free packet; the rest is read later, so it is not a loss), tx_errors (writes that failed), tx_dropped (packets transmitted to a device without write), loops (times loop restarted the file).`,
		Example: `[devices.lan]
driver = "pcap"
read   = "testdata/lan-in.pcap"
write  = "out/lan-out.pcap"`,
		SeeAlso: "gen (a source of frames to write), configs/make-pcap.toml",
	}
}
