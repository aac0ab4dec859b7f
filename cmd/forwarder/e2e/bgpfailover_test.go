package e2e

import (
	"encoding/binary"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/junction-dataplane/junction/internal/netns"
)

// TestBGPRouterFailover: two routers running bgp-router.toml side by side
// (r1: LAN 10.1.0.1, WAN 10.2.0.1; r2: LAN 10.1.0.3, WAN 10.3.0.1; one
// worker each), both on the LAN host's bridge, each announcing the LAN
// 10.1.0.0/24 by BGP to an upstream BIRD (AS 65002) that merges the two
// paths into one multipath route (5-tuple hash) and runs BFD (100 ms × 7)
// on both sessions. 64 UDP flows from the upstream to the LAN host, 2,000
// packets a second in all, spread over the routers; r1's forwarder is
// killed. Each router's worker has a CPU of its own. Every flow keeps
// arriving, those r1 carried within 1 s (scaled
// for a loaded machine) of their last packet through r1.
func TestBGPRouterFailover(t *testing.T) {
	requireAll(t)
	netns.RequireTool(t, "bird")
	env := netns.New(t)
	up, lan := env.NS("up"), env.NS("lan")
	host := env.NS("host")
	bin := forwarderBin(t)
	base, err := os.ReadFile(bgpConfigPath(t))
	if err != nil {
		t.Fatal(err)
	}
	lan.MustRun("ip", "link", "add", "br0", "type", "bridge")
	lan.Up("br0")
	env.Veth(host, "eth0", lan, "hport", 1)
	lan.MustRun("ip", "link", "set", "hport", "master", "br0")
	host.Addr("eth0", "10.1.0.2/24")
	host.MustRun("ethtool", "-K", "eth0", "tx", "off")
	up.Sysctl("net.ipv4.fib_multipath_hash_policy", "1")

	type router struct {
		ns              *netns.NS
		lanAddr, wanNet string
		proc            *netns.Proc
	}
	routers := []*router{{lanAddr: "10.1.0.1", wanNet: "10.2.0"}, {lanAddr: "10.1.0.3", wanNet: "10.3.0"}}
	for i, r := range routers {
		r.ns = env.NS(fmt.Sprintf("r%d", i+1))
		env.Veth(r.ns, "lan0", lan, fmt.Sprintf("r%dport", i+1), 1)
		lan.MustRun("ip", "link", "set", fmt.Sprintf("r%dport", i+1), "master", "br0")
		uplink := fmt.Sprintf("eth%d", i+1)
		env.Veth(r.ns, "wan0", up, uplink, 1)
		up.Addr(uplink, r.wanNet+".2/24")
		up.MustRun("ethtool", "-K", uplink, "tx", "off")
		cfg := strings.NewReplacer("10.1.0.1", r.lanAddr, "10.2.0.", r.wanNet+".",
			"2001:db8:2:", fmt.Sprintf("2001:db8:%d:", i+2), "2001:db8:1::1", fmt.Sprintf("2001:db8:1::%d", 2*i+1),
			"workers = 2", "workers = 1").Replace(string(base))
		path := filepath.Join(t.TempDir(), "bgp-router.toml")
		if err := os.WriteFile(path, []byte(cfg), 0o644); err != nil {
			t.Fatal(err)
		}
		// Each router's worker on a CPU of its own, as on two boxes: on
		// one CPU, the dying router's teardown would hold up the
		// survivor's punt path, and with it the BFD it carries.
		r.proc = r.ns.Start(bin, "run", "-config", path, "-quiet", "-cpus", strconv.Itoa(i%runtime.NumCPU()),
			"-control", filepath.Join(t.TempDir(), "fwd.sock"))
		waitFor(t, 15*time.Second, fmt.Sprintf("r%d answering ping", i+1), func() (bool, string) {
			_, err := host.Run("ping", "-c1", "-W1", r.lanAddr)
			return err == nil, r.proc.Output()
		})
		startBird(t, r.ns, fmt.Sprintf(`log stderr all;
router id %[1]s.1;
protocol device { scan time 1; }
protocol direct { ipv4; interface "lan0h"; }
protocol bfd { interface "*" { min rx interval 100 ms; min tx interval 100 ms; multiplier 7; }; }
protocol bgp up {
  local %[1]s.1 as 65001; neighbor %[1]s.2 as 65002; %[2]s bfd on;
  ipv4 { import none; export where source = RTS_DEVICE; };
}
`, r.wanNet, birdTimers))
	}
	upBird := startBird(t, up, `log stderr all;
router id 10.2.0.2;
protocol device { scan time 1; }
protocol kernel { ipv4 { import none; export all; }; merge paths on; }
protocol bfd { interface "*" { min rx interval 100 ms; min tx interval 100 ms; multiplier 7; }; }
protocol bgp r1 { local 10.2.0.2 as 65002; neighbor 10.2.0.1 as 65001; `+birdTimers+` bfd on; ipv4 { import all; export none; }; }
protocol bgp r2 { local 10.3.0.2 as 65002; neighbor 10.3.0.1 as 65001; `+birdTimers+` bfd on; ipv4 { import all; export none; }; }
`)
	waitFor(t, 30*time.Second, "the upstream's multipath route to the LAN", func() (bool, string) {
		out := up.MustRun("ip", "route", "show", "10.1.0.0/24")
		return strings.Count(out, "nexthop via") == 2, out
	})

	// The receiver on the LAN host: per flow, the arrival times.
	var rx *net.UDPConn
	if err := host.Do(func() error {
		var err error
		rx, err = net.ListenUDP("udp4", &net.UDPAddr{IP: net.IPv4(10, 1, 0, 2), Port: 9000})
		return err
	}); err != nil {
		t.Fatal(err)
	}
	defer rx.Close()
	const flows = 64
	var mu sync.Mutex
	arrivals := make([][]time.Time, flows)
	go func() {
		buf := make([]byte, 64)
		for {
			n, err := rx.Read(buf)
			if err != nil {
				return
			}
			if n >= 2 {
				f := int(binary.BigEndian.Uint16(buf)) % flows
				mu.Lock()
				arrivals[f] = append(arrivals[f], time.Now())
				mu.Unlock()
			}
		}
	}()
	// The senders: one socket (source port) per flow, round robin.
	var tx []*net.UDPConn
	if err := up.Do(func() error {
		for i := 0; i < flows; i++ {
			c, err := net.DialUDP("udp4", nil, &net.UDPAddr{IP: net.IPv4(10, 1, 0, 2), Port: 9000})
			if err != nil {
				return err
			}
			tx = append(tx, c)
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	stop := make(chan struct{})
	sent := make(chan int)
	go func() {
		msg := make([]byte, 64)
		n := 0
		tick := time.NewTicker(time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-stop:
				sent <- n
				return
			case <-tick.C:
			}
			for j := 0; j < 2; j++ {
				f := n % flows
				binary.BigEndian.PutUint16(msg, uint16(f))
				tx[f].Write(msg)
				n++
			}
		}
	}()
	defer func() {
		for _, c := range tx {
			c.Close()
		}
	}()
	time.Sleep(3 * time.Second)
	// Both routers carry flows: the upstream spreads them.
	for i, r := range routers {
		snap := (&topo{fwd: r.ns}).snapshot(t)
		carried := deviceCounter(snap, "wan", "fastpath_forwarded") + deviceCounter(snap, "lan", "tx_packets")
		t.Logf("r%d forwarded %d packets before the failover", i+1, carried)
		if carried < 500 {
			t.Errorf("r%d forwarded %d packets of the 6,000 sent: the upstream does not spread the flows over both routers", i+1, carried)
		}
	}
	since2, up2, _ := upBird.session("r2")
	if !up2 {
		t.Fatal("the upstream's session with r2 is down before the failover")
	}
	killed := time.Now()
	routers[0].proc.Kill()
	waitFor(t, 10*time.Second, "the upstream's route through r2 only", func() (bool, string) {
		out := up.MustRun("ip", "route", "show", "10.1.0.0/24")
		return !strings.Contains(out, "10.2.0.1") && strings.Contains(out, "10.3.0.1"), out
	})
	t.Logf("upstream route without r1 %v after the kill", time.Since(killed).Round(time.Millisecond))

	time.Sleep(3 * time.Second)
	close(stop)
	if now, up2, out := upBird.session("r2"); !up2 || !sameSince(now, since2) {
		t.Errorf("the upstream's session with r2 went down across r1's failure (BFD at 700 ms on a loaded machine?):\n%s", out)
	}
	total := <-sent
	time.Sleep(200 * time.Millisecond)

	mu.Lock()
	defer mu.Unlock()
	var worst time.Duration
	gapped, received := 0, 0
	for f, ts := range arrivals {
		received += len(ts)
		if len(ts) == 0 || ts[len(ts)-1].Before(killed.Add(2*time.Second)) {
			t.Errorf("flow %d: nothing arrived after the failover (%d packets in all)", f, len(ts))
			continue
		}
		var gap time.Duration
		for i := 1; i < len(ts); i++ {
			gap = max(gap, ts[i].Sub(ts[i-1]))
		}
		if gap > 200*time.Millisecond {
			gapped++
		}
		worst = max(worst, gap)
	}
	// Flows through r2 may pause too: the upstream replaces its route
	// (two paths by one) and rehashes.
	t.Logf("%d packets sent, %d received; %d of %d flows paused over 200 ms; the longest pause %v",
		total, received, gapped, flows, worst.Round(time.Millisecond))
	if limit := time.Duration(float64(time.Second) / cpuShare(t)); worst > limit {
		t.Errorf("the longest gap of a flow across the failover: %v, want under %v", worst, limit)
	}
}
