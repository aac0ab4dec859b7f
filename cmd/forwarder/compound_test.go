package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// compoundRouter is a two-sided router whose sides are one compound; rules
// is the side's Classifier rules.
func compoundRouter(rules string) string {
	return `[devices.lan]
driver    = "gen"
addresses = ["10.1.0.1/24"]
[devices.wan]
driver    = "gen"
addresses = ["192.0.2.2/24"]

[compounds.side]
params  = ["dev"]
inputs  = ["out"]
outputs = ["ip"]
links = [
  "FromDevice($dev) -> cls :: Classifier(` + rules + `)",
  "cls[0] -> arp :: Tee(2)",
  "arp[0] -> ARPResponder($dev) -> ToDevice($dev)",
  "arp[1] -> [1]q :: ARPQuerier($dev)",
  "cls[1] -> CheckIPHeader -> [ip]output",
  "cls[2] -> Discard",
  "input[out] -> q -> ToDevice($dev)",
]

[elements.rt]
type   = "IPLookup"
routes = ["10.1.0.0/24 out 0", "0.0.0.0/0 via 192.0.2.1 out 1"]

[graph]
links = [
  "lan :: side(lan)",
  "wan :: side(wan)",
  "lan[ip] -> ttl :: DecTTL -> rt",
  "wan[ip] -> ttl",
  "rt[0] -> [out]lan",
  "rt[1] -> [out]wan",
]
`
}

// TestReloadCompound: the flattened names of a compound's elements are the
// same from one load to the next, so a reload of a graph made of compounds
// keeps the state of their elements and reconfigures only what changed.
func TestReloadCompound(t *testing.T) {
	dir := t.TempDir()
	old := filepath.Join(dir, "old.toml")
	nw := filepath.Join(dir, "new.toml")
	os.WriteFile(old, []byte(compoundRouter("arp, ip, -")), 0o644)
	os.WriteFile(nw, []byte(compoundRouter("arp, ip and not src net 10.9.0.0/16, -")), 0o644)
	var out, errb bytes.Buffer
	if code := Main([]string{"reload", "-config", nw, "-dry-run", "-running", old}, &out, &errb); code != 0 {
		t.Fatalf("exit %d: %s", code, errb.String())
	}
	for _, want := range []string{
		"kept with state        lan/q (ARPQuerier)",
		"kept with state        wan/q (ARPQuerier)",
		"element reconfigured   lan/cls (Classifier)",
		"element reconfigured   wan/cls (Classifier)",
	} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("dry run does not say %q:\n%s", want, out.String())
		}
	}
	for _, not := range []string{"element added", "element removed", "link added", "link removed"} {
		if strings.Contains(out.String(), not) {
			t.Errorf("dry run says %q:\n%s", not, out.String())
		}
	}
}

// TestCheckCompoundErrorAtUse: forwarder check locates an error inside a
// compound at its line in the definition and names the use.
func TestCheckCompoundErrorAtUse(t *testing.T) {
	f := filepath.Join(t.TempDir(), "r.toml")
	os.WriteFile(f, []byte(strings.Replace(compoundRouter("arp, ip, -"), `"wan :: side(wan)"`, `"wan :: side(wna)"`, 1)), 0o644)
	var out, errb bytes.Buffer
	if code := Main([]string{"check", "-config", f}, &out, &errb); code != 1 {
		t.Fatalf("exit %d, want 1: %s", code, errb.String())
	}
	for _, want := range []string{
		`r.toml:13: element "wan/FromDevice(wna)@1" (FromDevice): key "device": no device "wna" (devices: lan, wan), did you mean "wan"? (in compound side, instance wan at line 29)`,
		`r.toml:16: element "wan/q" (ARPQuerier): key "device": no device "wna"`,
	} {
		if !strings.Contains(errb.String(), want) {
			t.Errorf("check does not say\n%s\nin\n%s", want, errb.String())
		}
	}
}

// TestCheckCompoundSummary: check counts the flattened elements and links
// and says how many compound uses made them.
func TestCheckCompoundSummary(t *testing.T) {
	f := filepath.Join(t.TempDir(), "r.toml")
	os.WriteFile(f, []byte(compoundRouter("arp, ip, -")), 0o644)
	var out, errb bytes.Buffer
	if code := Main([]string{"check", "-config", f}, &out, &errb); code != 0 {
		t.Fatalf("exit %d: %s", code, errb.String())
	}
	if want := "ok: 20 elements, 21 links, 2 devices, 2 compound uses\n"; out.String() != want {
		t.Errorf("check says %q, want %q", out.String(), want)
	}
}

// TestTraceCompound: trace names the path through compound uses by the
// flattened names, the use's name first.
func TestTraceCompound(t *testing.T) {
	src := strings.Replace(compoundRouter("arp, ip, -"), "[devices.lan]\ndriver    = \"gen\"\n",
		"[devices.lan]\ndriver    = \"gen\"\nsrc       = \"10.1.0.0/24\"\ndst       = \"10.9.0.0/16\"\n", 1)
	path := ctlRouterFile(t, "compound.toml", []byte(src))
	var tr traceResult
	ctlJSON(t, path, &tr, "trace", "-n", "1", "udp and dst net 10.9.0.0/16")
	if len(tr.Packets) != 1 {
		t.Fatalf("trace: %+v", tr)
	}
	var names []string
	for _, s := range tr.Packets[0].Path {
		names = append(names, s.Element)
	}
	p := tr.Packets[0]
	if got, want := strings.Join(names, " "), "lan/FromDevice(lan)@1 lan/cls lan/CheckIPHeader@1 ttl rt"; got != want || p.At != "wan/q" {
		t.Errorf("path %q, then %s at %s; want %q, then at wan/q (no neighbour yet)", got, p.Result, p.At, want)
	}
}
