package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/gopacket/layers"

	"github.com/junction-dataplane/junction/internal/pcaptest"
	"github.com/junction-dataplane/junction/pipeline"
)

// ctlRouter runs the default graph (gen devices: no root needed) on one
// worker with its control socket in a temporary directory.
func ctlRouter(t *testing.T) string {
	t.Helper()
	return ctlRouterFile(t, defaultGraphName, defaultGraph)
}

// ctlRouterFile starts a router of one worker on the graph src (named
// file) with its control socket; it returns the socket's path. Both are
// closed when the test ends.
func ctlRouterFile(t *testing.T, file string, src []byte) string {
	t.Helper()
	g, err := pipeline.Parse(file, src)
	if err != nil {
		t.Fatal(err)
	}
	r, err := pipeline.Start(g, pipeline.Options{Workers: 1, NoPin: true})
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "fwd.sock")
	rc, at, err := runControl(r, g, path, os.Stderr)
	if err != nil || at != path {
		t.Fatalf("control at %q: %v", at, err)
	}
	t.Cleanup(func() {
		rc.close()
		r.Stop()
		r.Wait()
	})
	return path
}

// ctl runs a client command against the socket and returns its exit
// status, stdout and stderr.
func ctl(t *testing.T, path string, args ...string) (int, string, string) {
	t.Helper()
	var out, errb bytes.Buffer
	full := append([]string{args[0], "-control", path}, args[1:]...)
	code := Main(full, &out, &errb)
	return code, out.String(), errb.String()
}

func ctlJSON(t *testing.T, path string, v any, args ...string) {
	t.Helper()
	code, out, errs := ctl(t, path, append(args, "-format", "json")...)
	if code != 0 {
		t.Fatalf("%v: exit %d: %s", args, code, errs)
	}
	if err := json.Unmarshal([]byte(out), v); err != nil {
		t.Fatalf("%v: %v in %q", args, err, out)
	}
}

func runtimeRowOf(r *runtimeResult, name string) *runtimeRow {
	for i := range r.Elements {
		if r.Elements[i].Element == name && r.Elements[i].Worker < 0 {
			return &r.Elements[i]
		}
	}
	return nil
}

func TestShowRuntimeAndClear(t *testing.T) {
	path := ctlRouter(t)
	time.Sleep(300 * time.Millisecond)
	var before runtimeResult
	ctlJSON(t, path, &before, "show", "runtime", "-workers")
	if len(before.Elements) == 0 || !strings.HasPrefix(before.Elements[0].Element, "FromDevice(in)") {
		t.Fatalf("first element %+v, want FromDevice(in) (graph order)", before.Elements)
	}
	src := runtimeRowOf(&before, before.Elements[0].Element)
	if src.Packets == 0 {
		t.Fatal("no packets counted")
	}
	perWorker := 0
	for _, e := range before.Elements {
		if e.Worker == 0 {
			perWorker++
		}
	}
	if perWorker == 0 {
		t.Error("-workers gave no per-worker rows")
	}
	var ifs []ifaceStat
	ctlJSON(t, path, &ifs, "show", "interfaces")
	if len(ifs) != 2 || len(ifs[0].Workers) != 1 || len(ifs[0].Queues) != 0 || ifs[0].Device != "in" || ifs[0].RxPackets == 0 || ifs[0].Rate1.RxPPS == 0 || ifs[1].Rate1.TxPPS == 0 || ifs[0].Workers[0].Packets == 0 {
		t.Errorf("interfaces: %+v", ifs)
	}
	if code, out, _ := ctl(t, path, "clear", "counters"); code != 0 || !strings.Contains(out, "cleared") {
		t.Fatalf("clear counters: %d %q", code, out)
	}
	var after runtimeResult
	ctlJSON(t, path, &after, "show", "runtime")
	if a := runtimeRowOf(&after, src.Element); a.Packets >= src.Packets+uint64(float64(src.Packets)*after.Since.Seconds()/before.Since.Seconds()) || after.Since >= after.Uptime {
		t.Errorf("after clear: %d packets over %v (uptime %v), before %d over %v", a.Packets, after.Since, after.Uptime, src.Packets, before.Since)
	}
	code, out, _ := ctl(t, path, "show", "runtime")
	if code != 0 || !strings.Contains(out, "element") || !strings.Contains(out, "rt") {
		t.Errorf("table: %d %q", code, out)
	}
	var errs errorsResult
	ctlJSON(t, path, &errs, "show", "errors", "-all")
	if code, _, errOut := ctl(t, path, "show", "interfaces", "eth9"); code != 2 || !strings.Contains(errOut, `no device "eth9"`) {
		t.Errorf("show interfaces eth9: %d %q", code, errOut)
	}
}

func TestRouteLive(t *testing.T) {
	path := ctlRouter(t)
	var rr routesResult
	ctlJSON(t, path, &rr, "show", "routes", "10.1.0.5")
	if !rr.Found || rr.Routes[0].Prefix.String() != "10.1.0.0/24" || rr.Element != "rt" {
		t.Fatalf("show routes 10.1.0.5: %+v", rr)
	}
	// Half the generated destinations (10.0.128.0/17) move to port 0,
	// which leads to ToDevice(in): packets start arriving there.
	code, out, errs := ctl(t, path, "route", "add", "10.0.128.0/17", "out", "0")
	if code != 0 || !strings.Contains(out, "added rt: 10.0.128.0/17") {
		t.Fatalf("route add: %d %q %q", code, out, errs)
	}
	ctlJSON(t, path, &rr, "show", "routes", "10.0.200.1")
	if !rr.Found || rr.Routes[0].Prefix.String() != "10.0.128.0/17" || rr.Routes[0].Source != "live" {
		t.Fatalf("after add: %+v", rr)
	}
	deadline := time.Now().Add(5 * time.Second)
	for {
		var rt runtimeResult
		ctlJSON(t, path, &rt, "show", "runtime")
		if e := runtimeRowOf(&rt, "ToDevice(in)@2"); e != nil && e.Packets > 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no packet reached ToDevice(in)@2 after route add: %+v", rt.Elements)
		}
		time.Sleep(50 * time.Millisecond)
	}
	for _, c := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{"route", "add", "10.0.128.0/17", "out", "1"}, 2, "exists (use route replace)"},
		{[]string{"route", "replace", "10.0.128.0/17", "via", "10.2.0.9", "out", "1"}, 0, "replaced rt: 10.0.128.0/17 via 10.2.0.9 out out  [live]"}, // rt[1] leads to device "out"
		{[]string{"route", "replace", "10.77.0.0/16", "out", "1"}, 2, "no route for this prefix"},
		{[]string{"route", "add", "10.0.0.0/33", "out", "1"}, 2, `"10.0.0.0/33": not a prefix`},
		{[]string{"route", "add", "10.1.0.0/8", "out", "1"}, 2, "host bits set"},
		{[]string{"route", "add", "10.5.0.0/16", "out", "7"}, 2, "out 7: this IPLookup has output ports 0..1"},
		{[]string{"route", "add", "10.5.0.0/16", "via", "x", "out", "1"}, 2, `"10.5.0.0/16 via x out 1"`},
		{[]string{"route", "add", "10.5.0.0/16", "out", "1", "-element", "core"}, 2, "no IPLookup of that name (this graph has: rt)"},
		{[]string{"route", "frob", "x"}, 2, `route "frob"`},
		{[]string{"route", "del", "10.0.128.0/17"}, 0, "deleted rt: 10.0.128.0/17"},
		{[]string{"route", "del", "10.0.128.0/17"}, 1, "no such route"},
		{[]string{"route", "reload"}, 0, "3 routes reloaded"},
		{[]string{"show", "routes", "banana"}, 2, `"banana": not an address or prefix`},
		{[]string{"show", "flows"}, 2, "no Conntrack"},
		{[]string{"show", "flwos"}, 2, `did you mean "flows"`},
		{[]string{"show", "routes", "-bogus"}, 2, "flag provided but not defined: -bogus"},
		{[]string{"show", "runtime", "-format", "xml"}, 2, `-format "xml": want table or json`},
		{[]string{"show"}, 2, "what? flows, nat, routes"},
	} {
		code, out, errs := ctl(t, path, c.args...)
		if code != c.code || !strings.Contains(out+errs, c.want) {
			t.Errorf("%v: exit %d %q %q, want %d and %q", c.args, code, out, errs, c.code, c.want)
		}
		if c.code == 2 && strings.Count(strings.TrimSpace(errs), "\n") > 1 {
			t.Errorf("%v: more than a message and a usage line: %q", c.args, errs)
		}
	}
}

func TestNoForwarder(t *testing.T) {
	code, _, errs := ctl(t, filepath.Join(t.TempDir(), "none.sock"), "show", "runtime")
	if code != 1 || !strings.Contains(errs, "no forwarder at") {
		t.Errorf("exit %d %q", code, errs)
	}
}

func TestTraceAndCapture(t *testing.T) {
	path := ctlRouter(t)
	var tr traceResult
	ctlJSON(t, path, &tr, "trace", "-n", "3", "udp and dst net 10.0.0.0/16")
	if len(tr.Packets) != 3 || tr.TimedOut {
		t.Fatalf("trace: %+v", tr)
	}
	p := tr.Packets[0]
	var path0 []string
	for _, s := range p.Path {
		path0 = append(path0, s.Element)
	}
	want := "FromDevice(in)@1 cls CheckIPHeader@1 ttl rt EtherRewrite@2"
	if strings.Join(path0, " ") != want || p.Result != "sent" || p.At != "device out" || p.Device != "in" {
		t.Errorf("path %q result %s at %s device %s, want %q sent at device out", strings.Join(path0, " "), p.Result, p.At, p.Device, want)
	}
	if len(p.Path) < 5 {
		t.Fatalf("path %+v", p.Path)
	}
	if p.Path[4].Port != 1 || !strings.Contains(strings.Join(p.Headers, "\n"), "UDP") || !strings.Contains(strings.Join(p.Final, "\n"), "ttl 63") {
		t.Errorf("rt left by port %d; headers %q; final %q", p.Path[4].Port, p.Headers, p.Final)
	}
	code, out, _ := ctl(t, path, "trace", "-n", "1", "udp")
	if code != 0 || !strings.Contains(out, "rt [1] -> [0] EtherRewrite@2") || !strings.Contains(out, "sent on out") {
		t.Errorf("trace table: %d %q", code, out)
	}

	// A filter nothing matches ends at the timeout.
	t0 := time.Now()
	ctlJSON(t, path, &tr, "trace", "-n", "1", "-timeout", "300ms", "tcp")
	if !tr.TimedOut || len(tr.Packets) != 0 || time.Since(t0) > 5*time.Second {
		t.Errorf("never-matching trace: %+v after %v", tr, time.Since(t0))
	}
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"trace", "tcp and"}, `filter "tcp and": col 8`},
		{[]string{"trace", "-n", "0"}, "-n 0: want 1..10000"},
		{[]string{"trace", "-timeout", "soon"}, "invalid value"},
		{[]string{"capture", "-element", "rtt", "-w", filepath.Join(t.TempDir(), "x.pcap")}, `no such element (did you mean "rt"?)`},
		{[]string{"capture", "-element", "rt", "-port", "5", "-w", filepath.Join(t.TempDir(), "x.pcap")}, "rt has output ports 0..1"},
		{[]string{"capture", "-element", "rt"}, "-w FILE.pcap is required"},
		{[]string{"capture", "-element", "ToDevice(out)@3", "-w", filepath.Join(t.TempDir(), "x.pcap")}, "no output ports (a sink)"},
	} {
		code, _, errs := ctl(t, path, c.args...)
		if code != 2 || !strings.Contains(errs, c.want) {
			t.Errorf("%v: exit %d %q, want 2 and %q", c.args, code, errs, c.want)
		}
	}

	file := filepath.Join(t.TempDir(), "rt1.pcap")
	code, out, errs := ctl(t, path, "capture", "-element", "rt", "-port", "1", "-n", "5", "-w", file)
	if code != 0 {
		t.Fatalf("capture: %d %q %q", code, out, errs)
	}
	pkts := pcaptest.Read(t, file)
	for i, pk := range pkts {
		ip, _ := pk.Layer(layers.LayerTypeIPv4).(*layers.IPv4)
		if ip == nil || ip.TTL != 63 || !strings.HasPrefix(ip.DstIP.String(), "10.0.") {
			t.Errorf("captured packet %d: %v", i+1, pk)
		}
	}
	n := len(pkts)
	if n != 5 {
		t.Errorf("%d packets in the pcap, want 5", n)
	}
}
