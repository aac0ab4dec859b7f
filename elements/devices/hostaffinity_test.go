package devices

import (
	"encoding/binary"
	"strings"
	"sync"
	"testing"

	"github.com/junction-dataplane/junction/elements"
	"github.com/junction-dataplane/junction/packet"
)

// hostSink records which worker each source address reached.
type hostSink struct {
	mu    *sync.Mutex
	where map[uint32]map[int]int // source address → worker → packets
	w     int
}

func (s *hostSink) Push(_ int, b *packet.Batch) {
	s.mu.Lock()
	for _, p := range b.Pkts {
		src := binary.BigEndian.Uint32(p.Data[p.L3+12:])
		if s.where[src] == nil {
			s.where[src] = map[int]int{}
		}
		s.where[src][s.w]++
		p.Free()
	}
	s.mu.Unlock()
}

// TestHostAffinity: two workers spreading one 802.1Q trunk queue; with
// host_affinity = ["192.168.20.0/24"], the 8 flows of each of 16 guest
// hosts (VLAN 20) all reach their host's worker, the hosts are spread over
// both workers, and the 128 flows of LAN hosts (VLAN 10, not listed) by
// their flow reach both workers for one host (which the steering reads
// through the tag: at a fixed offset of 14 it would hash the Ethernet
// addresses and keep the LAN host on one worker). Without the key, a
// guest's flows reach both workers (what the key is for).
func TestHostAffinity(t *testing.T) {
	tagged := func(f []byte, vid uint16) []byte {
		out := append(append([]byte{}, f[:12]...), 0x81, 0, byte(vid>>8), byte(vid))
		return append(out, f[12:]...)
	}
	var frames [][]byte
	for h := range 16 {
		for fl := range 8 {
			frames = append(frames, tagged(udpFrame(0xc0a81400+uint32(1+h), 0xc6336407, uint16(40000+fl*7), 53), 20))
		}
	}
	for fl := range 128 {
		frames = append(frames, tagged(udpFrame(0xc0a80a0a, 0xc6336407, uint16(30000+fl), 443), 10))
	}
	for _, affinity := range []bool{true, false} {
		dev := &seqDev{frames: frames, count: 20 * len(frames), pool: packet.NewPool(1024)}
		slot := &elements.SharedSlot{}
		mu := &sync.Mutex{}
		where := map[uint32]map[int]int{}
		typ, _ := elements.Lookup("FromDevice")
		var srcs []*FromDevice
		for w := range 2 {
			out := elements.NewOutput(&elements.Clock{})
			out.Connect(&hostSink{mu: mu, where: where, w: w}, 0, &elements.Stats{})
			ctx := elements.NewContext("trunkin", w, 2, 64, []*elements.Output{out}, &elements.Stats{}, packet.NewPool(8), dev.Set(), slot)
			cfg := &FromConfig{Device: "lan", Spread: "auto"}
			if affinity {
				cfg.HostAffinity = []string{"192.168.20.0/24"}
			}
			el, err := typ.New(cfg, ctx)
			if err != nil {
				t.Fatal(err)
			}
			srcs = append(srcs, el.(*FromDevice))
		}
		for i := 0; i < 5000 && !(srcs[0].Drained() && srcs[1].Drained()); i++ {
			srcs[0].Poll()
			srcs[1].Poll()
		}
		if !srcs[0].Drained() || !srcs[1].Drained() {
			t.Fatalf("affinity %v: not drained", affinity)
		}
		split, hostsOn := 0, map[int]int{}
		for h := range 16 {
			ws := where[0xc0a81400+uint32(1+h)]
			if len(ws) > 1 {
				split++
			}
			for w := range ws {
				hostsOn[w]++
			}
		}
		lan := where[0xc0a80a0a]
		t.Logf("affinity %v: guests on two workers %d of 16, guests by worker %v, the LAN host's packets by worker %v", affinity, split, hostsOn, lan)
		if affinity && (split != 0 || len(hostsOn) != 2) {
			t.Errorf("with host_affinity: %d guests reached both workers, guests by worker %v; want none split, both workers used", split, hostsOn)
		}
		if !affinity && split == 0 {
			t.Errorf("without host_affinity no guest's 8 flows reached both workers: the test shows nothing")
		}
		if len(lan) != 2 {
			t.Errorf("affinity %v: the LAN host's 128 flows reached workers %v, want both (steered by flow)", affinity, lan)
		}
		for _, f := range srcs {
			f.Close()
		}
		if dev.pool.Outstanding() != 0 {
			t.Errorf("device pool: %d outstanding", dev.pool.Outstanding())
		}
	}
}

// TestHostAffinityConfig: networks of both families parse (masked); a
// bad one, or host_affinity with spread = "off", is an error at the key.
func TestHostAffinityConfig(t *testing.T) {
	c := &FromConfig{Device: "lan", Spread: "auto", HostAffinity: []string{"192.168.20.7/24", " 2001:db8:20::5/64"}}
	if err := c.Validate(); err != nil {
		t.Fatal(err)
	}
	if len(c.hosts.V4) != 1 || c.hosts.V4[0].Addr != 0xc0a81400 || c.hosts.V4[0].Bits != 24 ||
		len(c.hosts.V6) != 1 || c.hosts.V6[0].String() != "2001:db8:20::/64" {
		t.Errorf("parsed %+v", c.hosts)
	}
	for _, bad := range []*FromConfig{
		{Device: "lan", Spread: "auto", HostAffinity: []string{"192.168.20.0"}},
		{Device: "lan", Spread: "auto", HostAffinity: []string{"guests"}},
		{Device: "lan", Spread: "off", HostAffinity: []string{"192.168.20.0/24"}},
	} {
		if err := bad.Validate(); err == nil || !strings.Contains(err.Error(), `key "host_affinity"`) {
			t.Errorf("%v: %v", bad.HostAffinity, err)
		}
	}
}
