package e2e

import (
	"encoding/binary"
	"net"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/junction-dataplane/junction/internal/netns"
	"github.com/junction-dataplane/junction/packet"
)

// floodFrames are the two frames of a punt flood at the router's WAN
// address, rewritten for every packet: a TCP SYN to 10.2.0.1:179 from a
// spoofed source in 198.18.0.0/15 (not a BGP peer), and an ARP request
// for 10.2.0.1 from a spoofed MAC and on-link sender.
type floodFrames struct {
	syn, arp []byte
}

func newFloodFrames(dst net.HardwareAddr) *floodFrames {
	f := &floodFrames{syn: make([]byte, 54), arp: make([]byte, 60)}
	copy(f.syn, dst)
	binary.BigEndian.PutUint16(f.syn[12:], packet.EtherTypeIPv4)
	ip := f.syn[14:34]
	ip[0], ip[8], ip[9] = 0x45, 64, 6
	binary.BigEndian.PutUint16(ip[2:], 40)
	copy(ip[16:], []byte{10, 2, 0, 1})
	tcp := f.syn[34:]
	binary.BigEndian.PutUint16(tcp[2:], 179)
	tcp[12], tcp[13] = 5<<4, 0x02 // SYN
	binary.BigEndian.PutUint16(tcp[14:], 64240)

	copy(f.arp, "\xff\xff\xff\xff\xff\xff")
	binary.BigEndian.PutUint16(f.arp[12:], packet.EtherTypeARP)
	copy(f.arp[14:22], []byte{0, 1, 8, 0, 6, 4, 0, 1})
	copy(f.arp[38:42], []byte{10, 2, 0, 1})
	return f
}

// set makes the i-th packet of each kind.
func (f *floodFrames) set(i uint32) {
	v := i*2654435761 + 12345
	mac := []byte{0x02, 0xfe, byte(v >> 24), byte(v >> 16), byte(v >> 8), byte(v)}
	copy(f.syn[6:12], mac)
	ip, tcp := f.syn[14:34], f.syn[34:]
	src := [4]byte{198, 18 | byte(v>>16)&1, byte(v >> 8), byte(v)}
	copy(ip[12:], src[:])
	binary.BigEndian.PutUint16(ip[4:], uint16(i))
	binary.BigEndian.PutUint16(ip[10:], 0)
	binary.BigEndian.PutUint16(ip[10:], packet.Checksum(ip))
	binary.BigEndian.PutUint16(tcp[0:], 1024+uint16(v%60000))
	binary.BigEndian.PutUint32(tcp[4:], v)
	binary.BigEndian.PutUint16(tcp[16:], 0)
	binary.BigEndian.PutUint16(tcp[16:], ^packet.Fold(packet.Sum(tcp, packet.PseudoHeaderSumV4(src, [4]byte{10, 2, 0, 1}, 6, len(tcp)))))

	copy(f.arp[6:12], mac)
	copy(f.arp[22:28], mac)
	copy(f.arp[28:32], []byte{10, 2, 0, byte(3 + v%250)})
}

// flood sends SYNs and ARP requests alternately at pps frames a second
// until stop closes, and returns how many it sent.
func flood(raw *netns.Raw, f *floodFrames, pps int, stop <-chan struct{}) int {
	start := time.Now()
	sent := 0
	for i := uint32(0); ; i++ {
		if i%64 == 0 {
			select {
			case <-stop:
				return sent
			default:
			}
			if d := time.Until(start.Add(time.Duration(i) * time.Second / time.Duration(pps))); d > 0 {
				time.Sleep(d)
			}
		}
		f.set(i / 2)
		fr := f.syn
		if i%2 == 1 {
			fr = f.arp
		}
		if raw.Send(fr) == nil {
			sent++
		}
	}
}

// TestBGPRouterPuntFlood: a flood at the router's WAN address (TCP SYNs
// to port 179 from sources that are not BGP peers, and ARP requests from
// spoofed senders, together $JUNCTION_FLOOD_PPS a second, 40,000 by
// default: 8 times HostPunt's other_rate plus 10 times its
// neighbor_rate) while a fixed-rate UDP stream (iperf3, 200 Mbit/s of
// 1400-byte datagrams, 17,900 a second) crosses the router to the
// BGP-learned 10.16.0.5. Runs with and without the flood alternate (three
// of each, 5 s); the median delivered rate with the flood must keep 90%
// of the median without; the BGP session stays established; the policer
// drops and counts the flood by class and drops no BGP packet. A fixed
// offered rate, not TCP at full speed: on a machine whose CPUs the
// hosts, the flood's sender and the router share, a TCP stream's rate
// measures the CPU the sender takes as much as the router.
func TestBGPRouterPuntFlood(t *testing.T) {
	var edit func(string) string
	unpoliced := os.Getenv("JUNCTION_PUNT_UNPOLICED") != ""
	if unpoliced {
		// For the benchmark's comparison: the same graph with the
		// policer's rates out of reach.
		edit = func(s string) string {
			return strings.Replace(s, "[elements.hp]\n", "[elements.hp]\nneighbor_rate = 10000000\nrouting_rate = 10000000\nicmp_rate = 10000000\nother_rate = 10000000\n", 1)
		}
	}
	t0 := time.Now() // before the forwarder starts: HostPunt's counters cover less than time.Since(t0)
	tp, _ := newBGPTopo(t, edit)
	router, _ := birdPeers(t, tp)
	kernelRoute(t, tp, "10.16.0.0/12", true)
	routed(t, tp.cli, "10.16.0.5", true)
	pingOK(t, tp.cli, "10.16.0.5")
	// The sessions' "since" before the flood, once it holds for 2 s: a
	// session may settle just after it first comes up (BGP's connection
	// collision closes one of two connections), before any flood.
	since, since6 := settledSince(t, router, "uplink"), settledSince(t, router, "uplink6")
	pps := 40000
	if v, err := strconv.Atoi(os.Getenv("JUNCTION_FLOOD_PPS")); err == nil && v > 0 {
		pps = v
	}
	raw := tp.srv.MustRaw("eth0")
	frames := newFloodFrames(tp.fwd.MAC("wan0"))

	var base, flooded []float64
	var sentTotal int
	var floodTime time.Duration
	for round := 0; round < 6; round++ {
		withFlood := round%2 == 1
		stop := make(chan struct{})
		done := make(chan int)
		start := time.Now()
		if withFlood {
			go func() { done <- flood(raw, frames, pps, stop) }()
		}
		rep, out := iperfTo(t, tp.cli, tp.srv, "10.16.0.5", true, "iperf3", "-c", "10.16.0.5",
			"-u", "-b", "200M", "-l", "1400", "-t", "5", "-J", "--connect-timeout", "2000")
		r := rep.End.SumReceived
		if r.Seconds <= 0 || r.Packets <= 0 {
			t.Fatalf("iperf3: nothing received (%q)\n%.2000s", rep.Error, out)
		}
		delivered := (r.Packets - r.LostPackets) / r.Seconds
		if withFlood {
			close(stop)
			sentTotal += <-done
			floodTime += time.Since(start)
			flooded = append(flooded, delivered)
		} else {
			base = append(base, delivered)
		}
	}
	mb, mf := median(base), median(flooded)
	t.Logf("transit UDP delivered (packets/s, 5 s runs): without the flood %v, with %v; medians %.0f / %.0f = %.2f; flood %d frames at %.0f/s",
		rounded(base), rounded(flooded), mb, mf, mf/mb, sentTotal, float64(sentTotal)/floodTime.Seconds())
	// 90% on a machine with CPUs to spare; on a loaded one the flood's
	// sender and the hosts take the CPUs the router needs, and the floor
	// scales down (cpuShare). The policer's counts below hold at any load.
	if floor := 0.9 * cpuShare(t); unpoliced {
		t.Logf("HostPunt's rates out of reach: no assertion on the rate")
	} else if mf < floor*mb {
		t.Errorf("transit forwarding under the punt flood kept %.0f%% of its rate, want at least %.0f%%", 100*mf/mb, 100*floor)
	}
	for _, sess := range []struct{ name, since string }{{"uplink", since}, {"uplink6", since6}} {
		if now, up, st := router.session(sess.name); !up || !sameSince(now, sess.since) {
			t.Errorf("BGP session %s after the flood: established %v, since %q (was %q):\n%s", sess.name, up, now, sess.since, st)
		}
	}
	s := tp.snapshot(t)
	// What the flood cost before HostPunt: frames the WAN device could not
	// take (a full RX ring: the workers were short of CPU; afxdp's
	// rx_ring_full and rx_fill_empty, afpacket's rx_kernel_dropped), and
	// what the fast path's policer dropped of the traffic for the router
	// before the rings (SYNs: local_rate_dropped_syn).
	t.Logf("wan device: rx_packets %d, rx_ring_full %d, rx_kernel_dropped %d, rx_fill_empty %d, local_rate_dropped_syn %d, local_rate_passed %d",
		deviceCounter(s, "wan", "rx_packets"), deviceCounter(s, "wan", "rx_ring_full"),
		deviceCounter(s, "wan", "rx_kernel_dropped"), deviceCounter(s, "wan", "rx_fill_empty"),
		deviceCounter(s, "wan", "local_rate_dropped_syn"), deviceCounter(s, "wan", "local_rate_passed"))
	names := []string{"punted routing", "punted neighbor", "punted other", "routing over rate", "neighbor over rate", "other over rate"}
	got := map[string]uint64{}
	for _, n := range names {
		got[n] = counter(s, "HostPunt", n)
	}
	t.Logf("HostPunt: %v", got)
	if got["routing over rate"] != 0 || got["punted routing"] == 0 {
		t.Errorf("HostPunt: BGP punted %d, dropped %d", got["punted routing"], got["routing over rate"])
	}
	if !unpoliced {
		// What passed is within the rates (the defaults: other 5000/s,
		// neighbor 2000/s) over the forwarder's life, plus the buckets;
		// the rest of what reached HostPunt is counted as over rate.
		secs := time.Since(t0).Seconds()
		for _, c := range []struct {
			class string
			rate  float64
		}{{"other", 5000}, {"neighbor", 2000}} {
			if limit := uint64(c.rate*secs + c.rate*0.1 + 32); got["punted "+c.class] > limit {
				t.Errorf("HostPunt punted %d %s packets in %.1f s: more than its rate allows (%d)", got["punted "+c.class], c.class, secs, limit)
			}
			if got[c.class+" over rate"] == 0 {
				t.Errorf("HostPunt dropped no %s packet of the flood", c.class)
			}
		}
	}
}

func rounded(v []float64) []int {
	out := make([]int, len(v))
	for i, x := range v {
		out[i] = int(x)
	}
	return out
}

// settledSince returns session name's "since" once two reads 2 s apart
// agree and the session is established (at most 20 s).
func settledSince(t *testing.T, b *bird, name string) string {
	t.Helper()
	prev, _, _ := b.session(name)
	for deadline := time.Now().Add(20 * time.Second); time.Now().Before(deadline); {
		time.Sleep(2 * time.Second)
		now, up, _ := b.session(name)
		if up && sameSince(now, prev) {
			return now
		}
		prev = now
	}
	_, _, out := b.session(name)
	t.Fatalf("BGP session %s did not settle in 20 s:\n%s", name, out)
	return ""
}
