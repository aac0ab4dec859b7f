package e2e

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestReloadNATGatewayWorkers: configs/nat-gateway.toml as shipped
// (afpacket with the fast path in TC; two queues per veth) reloaded by SIGHUP from 2 workers to 1, back to 2 and to 1
// again while an iperf3 TCP stream runs from the inside host to the
// outside one and curl reaches the inside server through the DNAT port
// forward: the stream never stalls, the connection survives every change
// of owner (its Conntrack entry and SNAT binding move with it), each
// reload reports the change of workers and no packet lost, and the
// forwarder ends with the count the last file asks for.
func TestReloadNATGatewayWorkers(t *testing.T) {
	tp := newNATTopoQueues(t, 2)
	base, err := os.ReadFile(tp.config)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(base), "\nworkers = 2\n") {
		t.Fatal("configs/nat-gateway.toml no longer says workers = 2")
	}
	one := strings.Replace(string(base), "\nworkers = 2\n", "\nworkers = 1\n", 1)
	dir := t.TempDir()
	cfg := filepath.Join(dir, "nat-gateway.toml")
	if err := os.WriteFile(cfg, base, 0o644); err != nil {
		t.Fatal(err)
	}
	tp.config = cfg
	serveHTTP(t, tp.in, natInside+":80", "inside")
	g := &gateway{name: "nat", cli: tp.in, fwd: tp.fwd, srv: tp.ot, dst: natOutside, bin: tp.bin, config: cfg}
	g.iperfServer(t)
	url := fmt.Sprintf("http://%s:%d/", natWANAddr, natTCPPort)

	p := tp.start(t)
	defer stopFwd(t, p)
	natCurl(t, tp.ot, url, "inside")
	files := [3]string{one, string(base), one}
	jun := streamWith(t, g, func(i int) {
		if err := os.WriteFile(cfg, []byte(files[i]), 0o644); err != nil {
			t.Fatal(err)
		}
		p.Signal(syscall.SIGHUP)
		natCurl(t, tp.ot, url, "inside")
	})
	if jun.err != "" {
		t.Fatalf("stream through the reloads: %s\n%s", jun.err, jun.out)
	}
	if s := jun.stall(); s != "" {
		t.Errorf("the stream stalled across the changes of workers: %s", s)
	}
	t.Logf("TCP across workers 2 → 1 → 2 → 1: %.0f Mbit/s, %d retransmits", jun.bps/1e6, jun.retrans)

	var gen uint64
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(100 * time.Millisecond) {
		snap := natSnapshot(t, tp.fwd)
		gen = snap.Graph.Generation
		if gen >= 4 || time.Now().After(deadline) {
			workers := map[int]bool{}
			for _, e := range snap.Elements {
				workers[e.Worker] = true
			}
			if gen == 4 && len(workers) != 1 {
				t.Errorf("the stats show %d workers after the last reload to 1", len(workers))
			}
			break
		}
	}
	if gen != 4 {
		t.Errorf("generation %d after three reloads, want 4", gen)
	}
	natCurl(t, tp.ot, url, "inside")
	out := p.Output()
	if testing.Verbose() {
		t.Logf("forwarder output:\n%s", out)
	}
	if n := strings.Count(out, "reloaded "+cfg); n != 3 {
		t.Errorf("%d reports of a reload in the output, want 3:\n%s", n, out)
	}
	for _, change := range []string{"2 → 1", "1 → 2"} {
		if !strings.Contains(out, change) {
			t.Errorf("no reload reported workers %s:\n%s", change, out)
		}
	}
	if strings.Contains(out, "reload failed") {
		t.Errorf("a reload failed:\n%s", out)
	}
	for _, line := range strings.Split(out, "\n") {
		if strings.Contains(line, "packets lost in the switch") && !strings.Contains(line, "; 0 packets lost") {
			t.Errorf("a reload lost packets: %s", line)
		}
	}
}
