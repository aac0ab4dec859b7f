package gen

import (
	"encoding/binary"
	"strings"
	"testing"

	"github.com/junction-dataplane/junction/drivers"
	"github.com/junction-dataplane/junction/packet"
)

// TestSequence: with the sequence key each queue numbers its frames from 0
// without a gap, the queue is written beside the number, and the UDP
// checksum is 0 (none).
func TestSequence(t *testing.T) {
	d := openGen(t, 2, func(c *Config) { c.Sequence = true; c.Flows = 16 })
	for q := 0; q < 2; q++ {
		next := uint64(0)
		drain(t, d, q, 300, func(p *packet.Packet) {
			f := p.Data
			if got := binary.BigEndian.Uint16(f[SeqOffset:]); got != uint16(q) {
				t.Fatalf("queue %d: frame says queue %d", q, got)
			}
			if got := binary.BigEndian.Uint64(f[SeqOffset+2:]); got != next {
				t.Fatalf("queue %d: sequence %d, want %d", q, got, next)
			}
			if cs := binary.BigEndian.Uint16(f[udpCsum:]); cs != 0 {
				t.Fatalf("UDP checksum %#x, want 0 with sequence numbers", cs)
			}
			if !packet.IPv4(f[l3Off:]).ChecksumValid() {
				t.Fatal("IPv4 checksum broken")
			}
			next++
		})
	}
	checkNoLeak(t, d)
}

// TestSequenceNeedsUDP: sequence with TCP is refused, naming the key.
func TestSequenceNeedsUDP(t *testing.T) {
	drv, _ := drivers.Lookup("gen")
	cfg := drv.NewConfig().(*Config)
	cfg.Sequence, cfg.Proto, cfg.Size = true, "tcp", 64
	_, err := drv.Open(cfg, drivers.OpenContext{Name: "g", Workers: 1, Batch: 64})
	if err == nil || !strings.Contains(err.Error(), "sequence") {
		t.Fatalf("err = %v, want one about the sequence key", err)
	}
}
