package e2e

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestKernelBlackhole: the contract router with its route table mirroring
// the kernel's main table (source = "kernel"; the fast path offloaded as
// shipped), and rt's unreachable and prohibit ports answered by
// ICMPError as the kernel answers. With `ip route add blackhole
// 10.16.5.1/32` under the covering 10.16.0.0/12, a ping through the
// router to 10.16.5.1 fails and is counted as "blackhole route" (neither
// the graph nor the fast path forwards it by the /12) while 10.16.5.2
// still answers; pings to an unreachable and a prohibit route get
// "Destination Host Unreachable" and "Packet filtered" from the router
// (ICMP host unreachable, administratively prohibited); once the
// blackhole is deleted, 10.16.5.1 answers again.
func TestKernelBlackhole(t *testing.T) {
	tp := newTopo(t, 1)
	for _, a := range []string{"10.16.5.1/32", "10.16.5.2/32", "10.16.6.1/32", "10.16.7.1/32"} {
		tp.srv.MustRun("ip", "addr", "add", a, "dev", "eth0")
	}
	tp.fwd.MustRun("ip", "route", "add", "10.1.0.0/24", "dev", "lan0")
	tp.fwd.MustRun("ip", "route", "add", "10.2.0.0/24", "dev", "wan0")
	tp.fwd.MustRun("ip", "route", "add", "10.16.0.0/12", "via", "10.2.0.2", "dev", "wan0", "onlink")
	tp.fwd.MustRun("ip", "route", "add", "blackhole", "10.16.5.1/32")

	cfg := kernelTableConfig(t, tp.config, `["lan", "wan", "lan", "wan"]`)
	answerTypedRoutes(t, cfg)
	p := tp.start(t, cfg)
	defer func() {
		out := tp.stop(t, p)
		if t.Failed() {
			t.Logf("forwarder output:\n%s", out)
		}
	}()

	pingOK(t, tp.cli, "10.16.5.2") // the covering prefix forwards
	// count is an IPLookup counter once it reaches at least min (the
	// workers publish their counters every few hundred milliseconds), or
	// its value after 3 s.
	count := func(name string, min uint64) uint64 {
		var n uint64
		for deadline := time.Now().Add(3 * time.Second); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
			if n = counter(tp.snapshot(t), "IPLookup", name); n >= min {
				break
			}
		}
		return n
	}
	if out, err := tp.cli.Run("ping", "-c3", "-i0.2", "-W1", "10.16.5.1"); err == nil {
		t.Errorf("ping to the blackholed 10.16.5.1 answered:\n%s", out)
	}
	if n := count("blackhole route", 3); n < 3 {
		t.Errorf("blackhole route: %d drops counted, want at least the 3 echo requests", n)
	}
	// Many packets: none may leave by the /12 in the fast path either.
	if out, err := tp.cli.Run("ping", "-c50", "-i0.005", "-W1", "-q", "10.16.5.1"); err == nil || !strings.Contains(out, "100% packet loss") {
		t.Errorf("a burst to 10.16.5.1 was forwarded:\n%s", out)
	}
	if n := count("blackhole route", 53); n < 53 {
		t.Errorf("blackhole route: %d drops counted after 53 echo requests", n)
	}
	if out, err := tp.cli.Run("ping", "-c20", "-i0.005", "-W1", "-q", "10.16.5.2"); err != nil || !strings.Contains(out, " 0% packet loss") {
		t.Errorf("the covering prefix after the burst: %v\n%s", err, out)
	}

	tp.fwd.MustRun("ip", "route", "add", "unreachable", "10.16.6.0/24")
	tp.fwd.MustRun("ip", "route", "add", "prohibit", "10.16.7.0/24")
	for _, c := range []struct{ dst, counter, says string }{
		{"10.16.6.1", "unreachable route answered", "Destination Host Unreachable"},
		{"10.16.7.1", "prohibit route answered", "Packet filtered"},
	} {
		// The mirror applies the kernel's change within milliseconds.
		var out string
		for deadline := time.Now().Add(3 * time.Second); time.Now().Before(deadline); {
			out, _ = tp.cli.Run("ping", "-c1", "-W1", c.dst)
			if strings.Contains(out, c.says) {
				break
			}
		}
		if !strings.Contains(out, c.says) || !strings.Contains(out, "From 10.1.0.1") {
			t.Errorf("ping %s: want %q from 10.1.0.1, got:\n%s", c.dst, c.says, out)
		}
		if count(c.counter, 1) == 0 {
			t.Errorf("%s: 0", c.counter)
		}
	}

	tp.fwd.MustRun("ip", "route", "del", "blackhole", "10.16.5.1/32")
	deadline := time.Now().Add(3 * time.Second)
	for {
		if _, err := tp.cli.Run("ping", "-c1", "-W1", "10.16.5.1"); err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("10.16.5.1 unreachable 3 s after its blackhole route was deleted")
		}
	}
}

// kernelTableConfig copies router-veth.toml (contract) with its table main
// (which rt and rte read) mirroring the kernel's main table instead of
// holding routes, offloaded to the devices of offload (a TOML list), and
// returns the copy's path.
func kernelTableConfig(t *testing.T, contract, offload string) string {
	t.Helper()
	data, err := os.ReadFile(contract)
	if err != nil {
		t.Fatal(err)
	}
	s := string(data)
	i := strings.Index(s, "[tables.main]")
	j := strings.Index(s[max(i, 0):], "]\n\n")
	if i < 0 || j < 0 {
		t.Fatal("router-veth.toml: no [tables.main] block ending in a routes list")
	}
	s = s[:i] + "[tables.main]\nsource      = \"kernel\"\ninterfaces  = [\"lan0\", \"wan0\"]\ninterfaces6 = [\"lan0\", \"wan0\"]\noffload     = " + offload + "\n\n" + s[i+j+3:]
	path := filepath.Join(t.TempDir(), "router-kernel.toml")
	if err := os.WriteFile(path, []byte(s), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// answerTypedRoutes gives rt of the router config at path unreachable and
// prohibit ports (4 and 5) whose packets ICMPError answers as the kernel
// does, the answers routed by rte.
func answerTypedRoutes(t *testing.T, path string) {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	s := string(data)
	rt := "[elements.rt]\ntype = \"IPLookup\"\n"
	// The top-level links: the [graph] table's (a compound's come before).
	g := strings.Index(s, "\n[graph]\n")
	l := strings.Index(s[max(g, 0):], "\nlinks = [\n")
	if !strings.Contains(s, rt) || g < 0 || l < 0 {
		t.Fatal("router-veth.toml: no [elements.rt] of type IPLookup alone, or no [graph] links = [")
	}
	l += g + len("\nlinks = [\n")
	s = s[:l] + "  \"rt[4] -> ICMPError(auto, unreachable, host) -> rte\",\n" +
		"  \"rt[5] -> ICMPError(auto, unreachable, adminprohibited) -> rte\",\n" + s[l:]
	s = strings.Replace(s, rt, rt+"unreachable = 4\nprohibit = 5\n", 1)
	if err := os.WriteFile(path, []byte(s), 0o644); err != nil {
		t.Fatal(err)
	}
}
