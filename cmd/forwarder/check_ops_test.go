package main

import (
	"github.com/junction-dataplane/junction/drivers/kfeature"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/gopacket"
	"github.com/google/gopacket/layers"
	"github.com/google/gopacket/pcapgo"
)

// TestCheckOffload: an offload key (IPLookup, FastTrack) naming a device
// that does not exist or has no fast path is refused by check, located,
// with the words run uses; an afxdp device with fastpath = true passes
// (check does not open it: lo stands for the interface).
func TestCheckOffload(t *testing.T) {
	devices := `[devices.lan]
driver = "gen"
mac = "02:00:00:00:01:01"

[devices.x]
driver = "afxdp"
interface = "lo"
fastpath = %s
`
	for _, c := range []struct {
		name, fastpath, element, want string
	}{
		{"gen device", "true", `type = "IPLookup"` + "\n" + `routes = ["10.0.0.0/8 out 0"]` + "\n" + `offload = ["lan"]`,
			`element "rt" (IPLookup): key "offload": entry 1: device "lan" has no fast path (it needs driver = "afxdp" with fastpath = true, or driver = "afpacket" with fastpath = "auto" or "tc")`},
		{"no such device", "true", `type = "IPLookup"` + "\n" + `routes = ["10.0.0.0/8 out 0"]` + "\n" + `offload = ["wan"]`,
			`element "rt" (IPLookup): key "offload": entry 1: no device "wan"`},
		{"afxdp without fastpath", "false", `type = "IPLookup"` + "\n" + `routes = ["10.0.0.0/8 out 0"]` + "\n" + `offload = ["x"]`,
			`key "offload": entry 1: device "x" has no fast path`},
		{"FastTrack", "true", `type = "FastTrack"` + "\n" + `outputs = 2` + "\n" + `offload = ["x", "lan"]`,
			`element "rt" (FastTrack): key "offload": entry 2: device "lan" has no fast path`},
		{"afxdp with fastpath", "true", `type = "IPLookup"` + "\n" + `routes = ["10.0.0.0/8 out 0"]` + "\n" + `offload = ["x"]`, ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			links := `"FromDevice(lan) -> rt", "rt[0] -> Discard", "FromDevice(x) -> Discard"`
			if strings.Contains(c.element, "FastTrack") {
				links = `"FromDevice(lan) -> rt", "rt[0] -> Discard", "rt[1] -> Discard", "rt[2] -> Discard", "FromDevice(x) -> Discard"`
			}
			src := strings.Replace(devices, "%s", c.fastpath, 1) + "\n[elements.rt]\n" + c.element + "\n\n[graph]\nlinks = [" + links + "]\n"
			path := writeFile(t, "offload.toml", src)
			code, out, errs := forwarder(t, "check", path)
			if c.want == "" {
				if code != 0 || strings.Contains(errs, "offload") {
					t.Errorf("check: exit %d, stdout %q, stderr %q; want ok", code, out, errs)
				}
				return
			}
			if code != 1 || out != "" || !strings.Contains(errs, c.want) || !strings.Contains(errs, "offload.toml:") || strings.Count(strings.TrimSpace(errs), "\n") != 0 {
				t.Errorf("check: exit %d, stdout %q, stderr %q; want one located line with %q", code, out, errs, c.want)
			}
		})
	}
}

// TestCheckOffloadRun: run refuses a gen device in an offload key with
// the same words as check, before opening anything.
func TestCheckOffloadRun(t *testing.T) {
	path := writeFile(t, "offload.toml", `[devices.lan]
driver = "gen"

[elements.rt]
type = "IPLookup"
routes = ["10.0.0.0/8 out 0"]
offload = ["lan"]

[graph]
links = ["FromDevice(lan) -> rt", "rt[0] -> Discard"]
`)
	want := `offload.toml:4: element "rt" (IPLookup): key "offload": entry 1: device "lan" has no fast path`
	code, _, errs := forwarder(t, "check", path)
	if code != 1 || !strings.Contains(errs, want) {
		t.Errorf("check: exit %d, %q; want %q", code, errs, want)
	}
	code, _, errs = forwarder(t, "run", "-config", path, "-stats", "off", "-workers", "1", "-duration", "10ms")
	if code != 1 || !strings.Contains(errs, want) {
		t.Errorf("run: exit %d, %q; want %q", code, errs, want)
	}
}

// TestCheckPcapDirection: FromDevice of a write-only pcap device and
// ToDevice of a read-only one are warned about, located; a device with
// both files draws neither warning.
func TestCheckPcapDirection(t *testing.T) {
	dir := t.TempDir()
	f, err := os.Create(filepath.Join(dir, "in.pcap"))
	if err != nil {
		t.Fatal(err)
	}
	w := pcapgo.NewWriter(f)
	if err := w.WriteFileHeader(65535, layers.LinkTypeEthernet); err != nil {
		t.Fatal(err)
	}
	w.WritePacket(gopacket.CaptureInfo{Timestamp: time.Unix(1, 0), CaptureLength: 60, Length: 60}, make([]byte, 60))
	f.Close()
	write := func(name, src string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(src), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	path := write("dir.toml", `[devices.rd]
driver = "pcap"
read = "in.pcap"

[devices.wr]
driver = "pcap"
write = "out.pcap"

[devices.both]
driver = "pcap"
read = "in.pcap"
write = "both.pcap"

[graph]
links = [
  "FromDevice(wr) -> ToDevice(rd)",
  "FromDevice(rd) -> ToDevice(wr)",
  "FromDevice(both) -> ToDevice(both)",
]
`)
	code, out, errs := forwarder(t, "check", path)
	for _, want := range []string{
		`dir.toml:16: element "FromDevice(wr)@1" (FromDevice): device "wr" (pcap) cannot receive (a pcap device needs a read file): it never gets a packet`,
		`dir.toml:16: element "ToDevice(rd)@1" (ToDevice): device "rd" (pcap) cannot transmit (a pcap device needs a write file): every packet sent to it is dropped`,
	} {
		if !strings.Contains(errs, want) {
			t.Errorf("no warning %q in %q", want, errs)
		}
	}
	if code != 0 || !strings.Contains(out, "(2 warnings)") || strings.Contains(errs, `"both"`) || strings.Contains(errs, `(wr)@1" (ToDevice)`) {
		t.Errorf("exit %d, stdout %q, stderr %q", code, out, errs)
	}
	if code, _, _ := forwarder(t, "check", "-strict", path); code != 1 {
		t.Errorf("check -strict: exit %d, want 1", code)
	}
}

// TestCheckFastPathFallback: check runs the kernel-feature probe as run
// does (features emulated missing here, as on kernels without them): a
// located warning where run will step down (fastpath_redirect "auto"),
// an error naming the feature where run would fail (an explicit "tc" or
// "xdp"), and a misspelt emulated feature is an error.
func TestCheckFastPathFallback(t *testing.T) {
	src := func(redirect string) string {
		return `[devices.x]
driver = "afxdp"
interface = "lo"
fastpath = true
fastpath_redirect = "` + redirect + `"

[graph]
links = ["FromDevice(x) -> Discard"]
`
	}
	// A kernel that really lacks bpf_xdp_adjust_meta names it whatever
	// else is emulated missing: it is asked first.
	t.Setenv("JUNCTION_KERNEL_MISSING", "")
	noTCX := `"tc" cannot be honoured: this kernel lacks tcx`
	if kfeature.Have(kfeature.XDPAdjustMeta) != nil {
		noTCX = `"tc" cannot be honoured: this kernel lacks xdp_adjust_meta`
	}
	for _, c := range []struct {
		name, missing, redirect string
		code                    int
		want                    string
	}{
		{"auto, no fast path", "optional", "auto", 0, `fallback.toml:1: device "x" (afxdp): no in-kernel fast path: this kernel lacks`},
		{"auto, no hand-off", "xdp_adjust_meta", "auto", 0, ""}, // lo is no veth: "auto" reaches it by XDP anyway
		{"tc, no hand-off", "xdp_adjust_meta", "tc", 1, `key "fastpath_redirect": lo: "tc" cannot be honoured: this kernel lacks xdp_adjust_meta`},
		{"tc, no tcx", "tcx", "tc", 1, noTCX},
		{"xdp, no fast path", "lpm_trie", "xdp", 1, `"xdp" cannot be honoured: the in-kernel fast path cannot run: this kernel lacks lpm_trie`},
		{"misspelt", "xdp_ajust_meta", "auto", 1, `JUNCTION_KERNEL_MISSING: "xdp_ajust_meta" is not a kernel feature`},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Setenv("JUNCTION_KERNEL_MISSING", c.missing)
			path := writeFile(t, "fallback.toml", src(c.redirect))
			code, out, errs := forwarder(t, "check", path)
			if code != c.code || !strings.Contains(errs, c.want) {
				t.Errorf("check: exit %d, stdout %q, stderr %q; want exit %d and %q", code, out, errs, c.code, c.want)
			}
			if c.code == 0 && c.want != "" && (!strings.HasPrefix(errs, "warning: ") || !strings.Contains(out, "1 warning")) {
				t.Errorf("check: stdout %q, stderr %q; want ok with one warning", out, errs)
			}
			if c.code == 0 && c.want == "" && errs != "" {
				t.Errorf("check: stderr %q, want nothing", errs)
			}
		})
	}
}
