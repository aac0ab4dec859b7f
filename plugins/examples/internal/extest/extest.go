package extest

import (
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"

	"github.com/google/gopacket"
	"github.com/google/gopacket/layers"

	"github.com/junction-dataplane/junction/internal/pcaptest"
)

// Root is the repository root.
func Root(t testing.TB) string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(file), "..", "..", "..", "..")
}

// Build builds the main package pkg (relative to the repository root) into
// dir and returns the executable's path.
func Build(t testing.TB, dir, pkg string) string {
	t.Helper()
	out := filepath.Join(dir, filepath.Base(pkg))
	cmd := exec.Command("go", "build", "-o", out, "./"+pkg)
	cmd.Dir = Root(t)
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build %s: %v\n%s", pkg, err, b)
	}
	return out
}

// Builds builds main packages once per test binary into a directory that
// Cleanup removes (call it from TestMain after m.Run).
type Builds struct {
	mu   sync.Mutex
	dir  string
	bins map[string]string
}

// Get returns the executable of pkg, building it on first use.
func (b *Builds) Get(t testing.TB, pkg string) string {
	t.Helper()
	b.mu.Lock()
	defer b.mu.Unlock()
	if p, ok := b.bins[pkg]; ok {
		return p
	}
	if b.dir == "" {
		d, err := os.MkdirTemp("", "junction-example-")
		if err != nil {
			t.Fatal(err)
		}
		b.dir, b.bins = d, map[string]string{}
	}
	p := Build(t, b.dir, pkg)
	b.bins[pkg] = p
	return p
}

// Cleanup removes the built executables.
func (b *Builds) Cleanup() {
	if b.dir != "" {
		os.RemoveAll(b.dir)
	}
}

// Graph reads configs/plugins/name, applies the replacements (old, new
// pairs; each must occur) and writes it into dir, returning its path.
func Graph(t testing.TB, dir, name string, repl ...string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(Root(t), "configs", "plugins", name))
	if err != nil {
		t.Fatal(err)
	}
	s := string(b)
	for i := 0; i+1 < len(repl); i += 2 {
		if !strings.Contains(s, repl[i]) {
			t.Fatalf("%s lacks %q", name, repl[i])
		}
		s = strings.ReplaceAll(s, repl[i], repl[i+1])
	}
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, []byte(s), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// UDP builds an Ethernet/IPv4/UDP frame with valid checksums.
func UDP(t testing.TB, src, dst string, sport, dport uint16, payload []byte) []byte {
	t.Helper()
	eth := &layers.Ethernet{SrcMAC: net.HardwareAddr{2, 0, 0, 0, 0, 1}, DstMAC: net.HardwareAddr{2, 0, 0, 0, 0, 2}, EthernetType: layers.EthernetTypeIPv4}
	ip := &layers.IPv4{Version: 4, IHL: 5, TTL: 64, Protocol: layers.IPProtocolUDP,
		SrcIP: net.ParseIP(src).To4(), DstIP: net.ParseIP(dst).To4()}
	udp := &layers.UDP{SrcPort: layers.UDPPort(sport), DstPort: layers.UDPPort(dport)}
	udp.SetNetworkLayerForChecksum(ip)
	buf := gopacket.NewSerializeBuffer()
	if err := gopacket.SerializeLayers(buf, gopacket.SerializeOptions{FixLengths: true, ComputeChecksums: true},
		eth, ip, udp, gopacket.Payload(payload)); err != nil {
		t.Fatal(err)
	}
	return append([]byte(nil), buf.Bytes()...)
}

// WritePcap writes frames to path (pcaptest.Write).
func WritePcap(t testing.TB, path string, frames [][]byte) {
	t.Helper()
	pcaptest.Write(t, path, frames)
}

// ReadPcap returns the frames of a pcap file, each decoded by gopacket
// (pcaptest.Read).
func ReadPcap(t testing.TB, path string) []gopacket.Packet { t.Helper(); return pcaptest.Read(t, path) }
