package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	_ "github.com/junction-dataplane/junction/drivers/all"
	_ "github.com/junction-dataplane/junction/elements/all"
	"github.com/junction-dataplane/junction/pipeline"
)

const usage = `pktgen — AF_XDP traffic source and sink for end-to-end benchmarks

  pktgen send -interface IF -dst-mac MAC [-queues N] [-src A] [-dst CIDR] [-flows N]
              [-size 64] [-rate PPS] [-count N] [-duration D]
      Sends UDP frames (destination port 9) out of IF on N queues (one
      worker each; queue q sends flows q, q+N, ..., each flow on one queue
      as RSS would): a gen device (frames built once, fields rewritten per
      packet) feeding ToDevice on an afxdp device. Prints one line per second
      and a summary: "send: N packets in D: R pps".

  pktgen sink -interface IF -addr CIDR [-queues N] [-duration D]
      Counts the IPv4 packets arriving on IF (AF_XDP), answering ARP for
      ADDR so that a router can resolve it. Prints one line per second
      ("sink: t=Ts rx_pps=R") and a summary: "sink: N packets in D: R pps".

Both run until -duration (0: until SIGINT/SIGTERM) and must run in the
interface's network namespace (ip netns exec NS pktgen ...). The -graph flag
prints the graph instead of running it.
`

func main() {
	if len(os.Args) < 2 {
		fmt.Fprint(os.Stderr, usage)
		os.Exit(2)
	}
	var err error
	switch os.Args[1] {
	case "send":
		err = send(os.Args[2:], os.Stdout)
	case "sink":
		err = sink(os.Args[2:], os.Stdout)
	case "help", "-h", "-help", "--help":
		fmt.Print(usage)
		return
	default:
		err = fmt.Errorf("unknown command %q (send, sink, help)", os.Args[1])
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "pktgen:", err)
		os.Exit(1)
	}
}

// sendGraph is the source graph: gen → ToDevice(afxdp).
func sendGraph(ifname string, queues int, src, dst, dstMAC string, flows int, size int, rate float64, count int64) string {
	return fmt.Sprintf(`[forwarder]
workers = %d

[devices.gen]
driver  = "gen"
queues  = %d
src     = %q
dst     = %q
flows   = %d
size    = %d
rate    = %g
count   = %d
dst_mac = %q
# Each flow on one queue, as a NIC's RSS would put it: a stateful
# forwarder then sees each flow on one RX queue only.
split_flows = true

[devices.out]
driver    = "afxdp"
interface = %q

[graph]
links = ["FromDevice(gen) -> ToDevice(out)", "FromDevice(out, off) -> Discard"]
`, queues, queues, src, dst, flows, size, rate, count, dstMAC, ifname)
}

// sinkGraph counts IPv4 arriving on ifname and answers ARP for addr.
func sinkGraph(ifname string, queues int, addr string) string {
	return fmt.Sprintf(`[forwarder]
workers = %d

[devices.in]
driver    = "afxdp"
interface = %q
addresses = [%q]

[graph]
links = [
  "FromDevice(in, off) -> c :: Classifier(arp request, ip, -)",
  "c[0] -> ARPResponder(in) -> ToDevice(in)",
  "c[1] -> count :: Counter -> Discard",
  "c[2] -> Discard",
]
`, queues, ifname, addr)
}

func send(args []string, out io.Writer) error {
	fs := flag.NewFlagSet("send", flag.ContinueOnError)
	ifname := fs.String("interface", "", "interface to send on (required)")
	queues := fs.Int("queues", 1, "TX queues, one worker each")
	src := fs.String("src", "10.1.0.2", "source address or CIDR")
	dst := fs.String("dst", "10.2.0.2", "destination address or CIDR (each packet's drawn uniformly)")
	dstMAC := fs.String("dst-mac", "", "destination MAC: the router's interface (required)")
	flows := fs.Int("flows", 1024, "distinct (source address, source port) pairs")
	size := fs.Int("size", 64, "frame size in bytes (without FCS)")
	rate := fs.Float64("rate", 0, "packets per second over all queues (0: as fast as possible)")
	count := fs.Int64("count", 0, "packets to send (0: until -duration)")
	duration := fs.Duration("duration", 10*time.Second, "how long to send (0: until SIGINT)")
	graph := fs.Bool("graph", false, "print the graph and exit")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *ifname == "" || *dstMAC == "" {
		return fmt.Errorf("send: -interface and -dst-mac are required")
	}
	text := sendGraph(*ifname, *queues, *src, *dst, *dstMAC, *flows, *size, *rate, *count)
	if *graph {
		fmt.Fprint(out, text)
		return nil
	}
	return runGraph("send", text, *duration, out, func(s *pipeline.Snapshot) uint64 {
		return deviceCounter(s, "out", "tx_packets", "tx")
	})
}

func sink(args []string, out io.Writer) error {
	fs := flag.NewFlagSet("sink", flag.ContinueOnError)
	ifname := fs.String("interface", "", "interface to count on (required)")
	queues := fs.Int("queues", 1, "RX queues, one worker each")
	addr := fs.String("addr", "", "address/prefix to answer ARP for (e.g. 10.2.0.2/24; required)")
	duration := fs.Duration("duration", 0, "how long to count (0: until SIGINT)")
	graph := fs.Bool("graph", false, "print the graph and exit")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *ifname == "" || *addr == "" {
		return fmt.Errorf("sink: -interface and -addr are required")
	}
	text := sinkGraph(*ifname, *queues, *addr)
	if *graph {
		fmt.Fprint(out, text)
		return nil
	}
	return runGraph("sink", text, *duration, out, func(s *pipeline.Snapshot) uint64 {
		var n uint64
		for _, e := range s.Elements {
			if e.Element == "count" {
				n += e.Packets
			}
		}
		return n
	})
}

// deviceCounter reads a driver counter by device and name (first match of
// the names given).
func deviceCounter(s *pipeline.Snapshot, dev string, names ...string) uint64 {
	for _, d := range s.Devices {
		if d.Device != dev {
			continue
		}
		for _, want := range names {
			for _, c := range d.Counters {
				if c.Name == want {
					return c.Value
				}
			}
		}
	}
	return 0
}

// runGraph runs a graph, printing the packets/s that count reports each
// second and a summary at the end.
func runGraph(what, text string, d time.Duration, out io.Writer, count func(*pipeline.Snapshot) uint64) error {
	g, err := pipeline.Parse(what+".toml", []byte(text))
	if err != nil {
		return err
	}
	r, err := pipeline.Start(g, pipeline.Options{Duration: d, Log: os.Stderr})
	if err != nil {
		return err
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	start := time.Now()
	tick := time.NewTicker(time.Second)
	defer tick.Stop()
	var prev uint64
	prevT := start
loop:
	for {
		select {
		case <-r.Done():
			break loop
		case <-ctx.Done():
			r.Stop()
		case now := <-tick.C:
			n := count(r.Snapshot())
			fmt.Fprintf(out, "%s: t=%.0fs rx_pps=%.0f total=%d\n", what, now.Sub(start).Seconds(),
				float64(n-prev)/now.Sub(prevT).Seconds(), n)
			prev, prevT = n, now
		}
	}
	werr := r.Wait()
	s := r.Snapshot()
	n := count(s)
	el := time.Since(start)
	fmt.Fprintf(out, "%s: %d packets in %v: %.0f pps\n", what, n, el.Round(time.Millisecond), float64(n)/el.Seconds())
	if what == "send" {
		var drops []string
		for _, dv := range s.Devices {
			for _, c := range dv.Counters {
				if strings.Contains(c.Name, "drop") || strings.Contains(c.Name, "error") {
					drops = append(drops, fmt.Sprintf("%s.%s=%d", dv.Device, c.Name, c.Value))
				}
			}
		}
		fmt.Fprintf(out, "%s: driver losses: %s\n", what, strings.Join(drops, " "))
	}
	return werr
}
