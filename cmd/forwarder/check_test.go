package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// checkGraph writes a graph with two gen devices (lan with a MAC, wan
// without one) and the given links, and runs forwarder check on it.
func checkGraph(t *testing.T, extra string, links ...string) (int, string, string) {
	t.Helper()
	src := `[devices.lan]
driver = "gen"
mac = "02:00:00:00:01:01"
addresses = ["10.1.0.1/24"]

[devices.wan]
driver = "gen"
` + extra + `
[graph]
links = [
  "` + strings.Join(links, "\",\n  \"") + `",
]
`
	path := writeFile(t, "g.toml", src)
	return forwarder(t, "check", path)
}

// TestCheckWarnings: each warning, located at the element it is about;
// the graph still checks ok (exit 0) without -strict.
func TestCheckWarnings(t *testing.T) {
	for _, c := range []struct {
		name  string
		links []string
		want  string // in the warning
	}{
		{"SNAT without Conntrack", []string{"FromDevice(lan) -> SNAT(203.0.113.1) -> Discard", "FromDevice(wan) -> Discard"},
			`element "SNAT@1" (SNAT): packets from FromDevice(lan)@1 reach it, and no Conntrack is before it`},
		{"DNAT without Conntrack", []string{"FromDevice(lan) -> DNAT(tcp 10.0.0.1:80 -> 10.1.0.2) -> Discard", "FromDevice(wan) -> Discard"},
			`(DNAT): packets from FromDevice(lan)@1 reach it, and no Conntrack is before it`},
		{"ct rule without Conntrack", []string{"FromDevice(lan) -> c :: Classifier(ct established, -)", "c[0] -> Discard", "c[1] -> Discard", "FromDevice(wan) -> Discard"},
			`element "c" (Classifier): packets from FromDevice(lan)@1 reach it, and no Conntrack is before it: rule 0 tests the connection-tracking state`},
		{"two FromDevice on one device", []string{"FromDevice(lan) -> Discard", "FromDevice(lan) -> Discard", "FromDevice(wan) -> Discard"},
			`element "FromDevice(lan)@2" (FromDevice): FromDevice(lan)@1 (line 11) also receives from device "lan"`},
		{"routed without rewrite", []string{"FromDevice(lan) -> DecTTL -> ToDevice(wan)", "FromDevice(wan) -> Discard"},
			`element "ToDevice(wan)@1" (ToDevice): packets routed by DecTTL@1 (DecTTL) reach it with the Ethernet addresses they arrived with`},
		{"Classifier rule after a catch-all", []string{"FromDevice(lan) -> c :: Classifier(ip, -, arp)", "c[0] -> Discard", "c[1] -> Discard", "c[2] -> Discard", "FromDevice(wan) -> Discard"},
			`element "c" (Classifier): rule 1 is "-" (every packet): the rules after it never match, outputs 2..2 receive nothing`},
		{"ARPQuerier on another device", []string{"FromDevice(lan) -> [0]q :: ARPQuerier(lan) -> ToDevice(wan)", "FromDevice(wan) -> [1]q"},
			`(ARPQuerier): resolves next hops on device "lan" but its packets leave by ToDevice(wan)@1 (device "wan")`},
		// It runs, and pings through it get no answer.
		{"ARPQuerier that never learns", []string{"FromDevice(lan) -> DecTTL -> q :: ARPQuerier(lan) -> ToDevice(lan)", "FromDevice(wan) -> Discard"},
			`g.toml:11: element "q" (ARPQuerier): input 1 is not connected: it learns neighbours only from the ARP frames given there, so no next hop is ever resolved`},
		{"NDPQuerier that never learns", []string{"FromDevice(lan) -> DecHopLimit -> q :: NDPQuerier(lan) -> ToDevice(lan)", "FromDevice(wan) -> Discard"},
			`g.toml:11: element "q" (NDPQuerier): input 1 is not connected: it learns neighbours only from the solicitations and advertisements given there, so no next hop is ever resolved and every packet sent through it is dropped ("unresolved"); connect NDPResponder(lan)'s output 2 to [1]q`},
	} {
		t.Run(c.name, func(t *testing.T) {
			code, out, errs := checkGraph(t, "", c.links...)
			if code != 0 || !strings.Contains(out, "(1 warning)") || !strings.Contains(errs, "warning: ") || !strings.Contains(errs, c.want) {
				t.Errorf("exit %d\nstdout %q\nstderr %q\nwant warning %q", code, out, errs, c.want)
			}
			if !strings.Contains(errs, "g.toml:") {
				t.Errorf("warning not located: %q", errs)
			}
		})
	}
}

// TestCheckNoWarnings: graphs that work as written draw no warning.
func TestCheckNoWarnings(t *testing.T) {
	for _, links := range [][]string{
		{"FromDevice(lan) -> Conntrack -> SNAT(203.0.113.1) -> Discard", "FromDevice(wan) -> Discard"},
		{"FromDevice(lan) -> Conntrack -> c :: Classifier(ct established, -)", "c[0] -> Discard", "c[1] -> Discard", "FromDevice(wan) -> Discard"},
		{"FromDevice(lan) -> ToDevice(wan)", "FromDevice(wan) -> ToDevice(lan)"}, // a bridge: nothing routed
		// Conntrack on one path: the other may be meant (nat-gateway.toml
		// sends the router's own ping replies through SNAT untracked).
		{"FromDevice(lan) -> x :: SNAT(203.0.113.1) -> Discard", "FromDevice(wan) -> Conntrack -> x"},
		{"FromDevice(lan) -> DecTTL -> EtherRewrite(02:00:00:00:01:01, 02:00:00:00:01:02) -> ToDevice(wan)", "FromDevice(wan) -> Discard"},
		{"FromDevice(lan) -> c :: Classifier(arp, -)", "c[0] -> [1]q :: ARPQuerier(lan) -> ToDevice(lan)", "c[1] -> DecTTL -> q", "FromDevice(wan) -> Discard"},
	} {
		code, out, errs := checkGraph(t, "", links...)
		if code != 0 || strings.Contains(out, "warning") || errs != "" {
			t.Errorf("%v: exit %d, stdout %q, stderr %q", links, code, out, errs)
		}
	}
}

// TestCheckStrict: -strict turns warnings into errors (exit 1), each
// still located.
func TestCheckStrict(t *testing.T) {
	src := "[devices.lan]\ndriver = \"gen\"\n[graph]\nlinks = [\"FromDevice(lan) -> SNAT(203.0.113.1) -> Discard\"]\n"
	path := writeFile(t, "strict.toml", src)
	code, out, errs := forwarder(t, "check", "-strict", path)
	if code != 1 || out != "" || !strings.Contains(errs, "strict.toml:4: element \"SNAT@1\" (SNAT)") || !strings.Contains(errs, "1 warning, errors with -strict") {
		t.Errorf("exit %d, stdout %q, stderr %q", code, out, errs)
	}
	if code, _, _ := forwarder(t, "check", path); code != 0 {
		t.Errorf("without -strict: exit %d, want 0", code)
	}
}

// TestCheckEnvironment: check raises what run would raise from the
// environment, with the same text.
func TestCheckEnvironment(t *testing.T) {
	dir := t.TempDir()
	for _, c := range []struct {
		name, device, links, want string
	}{
		{"pcap read file missing", "driver = \"pcap\"\nread = \"nope.pcap\"", "FromDevice(d) -> Discard",
			`device "d" (driver pcap): key "read": open ` + filepath.Join(dir, "nope.pcap") + `: no such file or directory`},
		{"pcap neither read nor write", "driver = \"pcap\"", "FromDevice(d) -> Discard",
			`device "d" (driver pcap): a pcap device needs "read", "write" or both`},
		{"pcap write directory missing", "driver = \"pcap\"\nwrite = \"no/such/dir/out.pcap\"", "FromDevice(d) -> Discard",
			`key "write": ` + filepath.Join(dir, "no/such/dir/out.pcap") + `: directory stat`},
		{"ARPQuerier without MAC", "driver = \"pcap\"\nwrite = \"out.pcap\"", "FromDevice(d) -> [0]ARPQuerier(d) -> ToDevice(d)",
			`element "ARPQuerier(d)@1" (ARPQuerier): key "device": device "d" has no MAC address (set its mac key)`},
		{"ARPResponder without address", "driver = \"gen\"\nmac = \"02:00:00:00:00:09\"", "FromDevice(d) -> ARPResponder(d) -> ToDevice(d)",
			`device "d" has no IPv4 address to answer for`},
		{"afpacket interface missing", "driver = \"afpacket\"\ninterface = \"nosuch0\"", "FromDevice(d) -> Discard",
			`key "interface": no interface "nosuch0" in this network namespace`},
	} {
		t.Run(c.name, func(t *testing.T) {
			src := "[devices.d]\n" + c.device + "\n[graph]\nlinks = [\"" + c.links + "\"]\n"
			path := filepath.Join(dir, "env.toml")
			if err := os.WriteFile(path, []byte(src), 0o644); err != nil {
				t.Fatal(err)
			}
			code, out, errs := forwarder(t, "check", path)
			if code != 1 || out != "" || !strings.Contains(errs, c.want) || !strings.Contains(errs, "env.toml:") {
				t.Errorf("check: exit %d, stdout %q, stderr %q; want %q", code, out, errs, c.want)
			}
			// run refuses it with the same words.
			code, _, rerrs := forwarder(t, "run", "-config", path, "-stats", "off", "-workers", "1", "-duration", "10ms")
			if code != 1 || !strings.Contains(rerrs, c.want) {
				t.Errorf("run: exit %d, stderr %q; want %q", code, rerrs, c.want)
			}
		})
	}
}

// TestCheckKernelNetns: IPLookup's kernel sync from a namespace that does
// not exist is refused by check as by run.
func TestCheckKernelNetns(t *testing.T) {
	src := `[devices.d]
driver = "gen"
[elements.rt]
type = "IPLookup"
source = "kernel"
netns = "junction-no-such-ns"
interfaces = ["lo"]
[graph]
links = ["FromDevice(d) -> rt -> Discard"]
`
	path := writeFile(t, "ns.toml", src)
	want := `ns.toml:3: element "rt" (IPLookup): source = "kernel": netns "junction-no-such-ns": `
	for _, args := range [][]string{{"check", path}, {"run", "-config", path, "-stats", "off", "-workers", "1", "-duration", "10ms"}} {
		code, _, errs := forwarder(t, args...)
		if code != 1 || !strings.Contains(errs, want) {
			t.Errorf("%s: exit %d, stderr %q, want %q", args[0], code, errs, want)
		}
	}
}
