package pcaptest

import (
	"os"
	"testing"
	"time"

	"github.com/google/gopacket"
	"github.com/google/gopacket/layers"
	"github.com/google/gopacket/pcapgo"
)

// Write writes frames to path as an Ethernet pcap file, one millisecond
// apart from a fixed time (so files are the same from run to run).
func Write(t testing.TB, path string, frames [][]byte) {
	t.Helper()
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	w := pcapgo.NewWriter(f)
	if err := w.WriteFileHeader(65535, layers.LinkTypeEthernet); err != nil {
		t.Fatal(err)
	}
	ts := time.Unix(1700000000, 0)
	for i, fr := range frames {
		ci := gopacket.CaptureInfo{Timestamp: ts.Add(time.Duration(i) * time.Millisecond), CaptureLength: len(fr), Length: len(fr)}
		if err := w.WritePacket(ci, fr); err != nil {
			t.Fatal(err)
		}
	}
}

// Read returns the frames of a pcap file, each decoded by gopacket.
func Read(t testing.TB, path string) []gopacket.Packet {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	r, err := pcapgo.NewReader(f)
	if err != nil {
		t.Fatal(err)
	}
	var out []gopacket.Packet
	for {
		data, _, err := r.ReadPacketData()
		if err != nil {
			break
		}
		out = append(out, gopacket.NewPacket(data, layers.LayerTypeEthernet, gopacket.Default))
	}
	return out
}
