package packet

import (
	"os/exec"
	"regexp"
	"strings"
	"testing"
)

// TestInlining fails when a hot-path function stops being inlinable: a
// refactor that pushes one over the inliner's budget would add a call per
// packet everywhere it is used. (After net/netip's inlining test.)
func TestInlining(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the package with -gcflags=-m")
	}
	gotool, err := exec.LookPath("go")
	if err != nil {
		t.Skipf("no go tool: %v", err)
	}
	cmd := exec.Command(gotool, "build", "--gcflags=-m", ".")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	got := map[string]bool{}
	re := regexp.MustCompile(`: can inline (\S+)`)
	for _, line := range strings.Split(string(out), "\n") {
		if m := re.FindStringSubmatch(line); m != nil {
			got[m[1]] = true
		}
	}
	want := []string{
		// Views and their accessors.
		"AsEthernet", "Ethernet.Type", "Ethernet.Dst", "Ethernet.Src", "Ethernet.SetDst", "Ethernet.SetSrc", "Ethernet.SetType", "Ethernet.Payload",
		"AsARP", "ARP.Op", "ARP.SenderIP", "ARP.TargetIP", "ARP.SenderMAC", "ARP.TargetMAC",
		"AsIPv4", "IPv4.Version", "IPv4.IHL", "IPv4.TOS", "IPv4.TotalLen", "IPv4.ID", "IPv4.FlagsFrag", "IPv4.FragOffset",
		"IPv4.MoreFragments", "IPv4.TTL", "IPv4.Protocol", "IPv4.Checksum", "IPv4.Src4", "IPv4.Dst4", "IPv4.SrcU32",
		"IPv4.DstU32", "IPv4.Src", "IPv4.Dst", "IPv4.SetTTL", "IPv4.SetChecksum", "IPv4.SetSrc4", "IPv4.SetDst4",
		"IPv4.SetTotalLen", "IPv4.Payload", "IPv4.DecTTL",
		"AsIPv6", "IPv6.PayloadLen", "IPv6.NextHeader", "IPv6.HopLimit", "IPv6.Src16", "IPv6.Dst16", "IPv6.SetHopLimit", "IPv6.Payload",
		"AsUDP", "UDP.SrcPort", "UDP.DstPort", "UDP.Length", "UDP.Checksum", "UDP.SetChecksum", "UDP.SetSrcPort", "UDP.SetDstPort",
		"AsTCP", "TCP.SrcPort", "TCP.DstPort", "TCP.Flags", "TCP.DataOffset", "TCP.Checksum", "TCP.SetChecksum",
		"AsICMP", "ICMP.Type", "ICMP.Code", "ICMP.Checksum", "ICMP.IsError",
		// Checksums.
		"Fold", "Sum", "UpdateChecksum16", "UpdateChecksum32", "PseudoHeaderSumV4",
		// Buffers and batches.
		"(*Pool).Get", "(*Pool).GetRaw", "(*Pool).put", "(*Pool).Available", "(*Pool).Outstanding",
		"(*Packet).Free", "(*Packet).Reset", "(*Packet).SetLen", "(*Packet).SetFrame", "(*Packet).Headroom",
		"(*Batch).Add", "(*Batch).Truncate", "(*Batch).Len", "(*Batch).Full", "(*Batch).Reset", "(*Batch).Bytes",
		// Flow hash: the per-packet wrapper and its helpers.
		"FlowHash", "fhMix", "fhPair", "fhEndpoint6",
	}
	for _, fn := range want {
		if !got[fn] {
			t.Errorf("%s is not inlinable", fn)
		}
	}
}
