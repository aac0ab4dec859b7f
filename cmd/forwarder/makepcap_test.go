package main

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// TestMakePcapThenRouter: configs/make-pcap.toml writes the input files
// router.toml reads (a gen -> pcap graph); before it, check refuses
// router.toml naming the missing file; after it, check says ok and run
// routes every packet: 1000 from the LAN out of the WAN, 1000 from the
// WAN out of the LAN.
func TestMakePcapThenRouter(t *testing.T) {
	dir := t.TempDir()
	for _, f := range []string{"make-pcap.toml", "router.toml"} {
		b, err := os.ReadFile(filepath.Join("../../configs", f))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, f), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	router := filepath.Join(dir, "router.toml")
	code, _, errs := forwarder(t, "check", router)
	if code != 1 || !strings.Contains(errs, `key "read": open `+filepath.Join(dir, "lan-in.pcap")+": no such file") {
		t.Fatalf("check before make-pcap: exit %d, stderr %q", code, errs)
	}
	if code, out, errs := forwarder(t, "run", "-config", filepath.Join(dir, "make-pcap.toml"), "-stats", "off", "-quiet"); code != 0 ||
		!strings.Contains(out, "total: rx 2000  tx 2000  drops 0") {
		t.Fatalf("make-pcap: exit %d\n%s\n%s", code, out, errs)
	}
	if code, out, errs := forwarder(t, "check", "-strict", router); code != 0 || !okLine.MatchString(out) {
		t.Fatalf("check after make-pcap: exit %d, stdout %q, stderr %q", code, out, errs)
	}
	code, out, errs := forwarder(t, "run", "-config", router, "-stats", "off", "-quiet")
	if code != 0 || !strings.Contains(out, "total: rx 2000  tx 2000  drops 0") {
		t.Fatalf("router: exit %d\n%s\n%s", code, out, errs)
	}
	for _, dev := range []string{"lan", "wan"} {
		m := regexp.MustCompile(`device ` + dev + ` \(pcap\): .*tx_packets (\d+)`).FindStringSubmatch(out)
		if m == nil || m[1] != "1000" {
			t.Errorf("device %s sent %v, want 1000\n%s", dev, m, out)
		}
	}
}
