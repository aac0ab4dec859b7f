package packet

import (
	"encoding/binary"
	"runtime"
	"testing"

	"github.com/junction-dataplane/junction/internal/cputime"
)

func TestL3Offset(t *testing.T) {
	frame := func(n int, types ...uint16) []byte {
		f := make([]byte, 12, 64)
		for _, ty := range types {
			f = binary.BigEndian.AppendUint16(f, ty)
			f = append(f, 0, 10) // a tag's TCI (VLAN 10) or an IP header's first bytes
		}
		for len(f) < n {
			f = append(f, 0)
		}
		return f[:n]
	}
	for _, c := range []struct {
		name string
		f    []byte
		want uint16
	}{
		{"untagged IPv4", frame(60, EtherTypeIPv4), 14},
		{"untagged IPv6", frame(60, EtherTypeIPv6), 14},
		{"LLDP (0x88cc: not a tag)", frame(60, 0x88cc), 14},
		{"MPLS (0x8847: not a tag)", frame(60, 0x8847), 14},
		{"802.1Q", frame(60, EtherTypeVLAN, EtherTypeIPv4), 18},
		{"802.1ad", frame(60, EtherTypeQinQ, EtherTypeIPv6), 18},
		{"QinQ", frame(60, EtherTypeQinQ, EtherTypeVLAN, EtherTypeIPv4), 22},
		{"802.1Q in 802.1Q", frame(60, EtherTypeVLAN, EtherTypeVLAN, EtherTypeIPv4), 22},
		{"three tags: past two only", frame(60, EtherTypeVLAN, EtherTypeVLAN, EtherTypeVLAN, EtherTypeIPv4), 22},
		{"tag cut short", frame(17, EtherTypeVLAN), 14},
		{"tag and its EtherType, nothing after", frame(18, EtherTypeVLAN, EtherTypeIPv4), 18},
		{"second tag cut short", frame(20, EtherTypeVLAN, EtherTypeVLAN), 18},
		{"runt", frame(10), 14},
		{"empty", nil, 14},
	} {
		if got := L3Offset(c.f); got != c.want {
			t.Errorf("%s: L3Offset = %d, want %d", c.name, got, c.want)
		}
		// Whatever the offset, the flow hash takes the frame without a
		// panic (the offset is never beyond the frame).
		if int(L3Offset(c.f)) > max(len(c.f), EthernetLen) {
			t.Errorf("%s: offset %d beyond the frame (%d bytes)", c.name, L3Offset(c.f), len(c.f))
		}
		FlowHashFrame(c.f, int(L3Offset(c.f)))
	}
}

// A tagged frame's flow hash is its inner IP flow's: the same as the
// untagged frame's, and symmetric.
func TestFlowHashPastTags(t *testing.T) {
	ip := make([]byte, 20+8)
	ip[0], ip[9] = 0x45, ProtoUDP
	copy(ip[12:], []byte{192, 168, 20, 20, 198, 51, 100, 7})
	binary.BigEndian.PutUint16(ip[20:], 40000)
	binary.BigEndian.PutUint16(ip[22:], 53)
	eth := func(tags ...uint16) []byte {
		f := make([]byte, 12)
		for _, ty := range tags {
			f = binary.BigEndian.AppendUint16(f, ty)
			f = append(f, 0, 20)
		}
		f = binary.BigEndian.AppendUint16(f, EtherTypeIPv4)
		return append(f, ip...)
	}
	plain := eth()
	want := FlowHashFrame(plain, int(L3Offset(plain)))
	if want != FlowHashV4(0xc0a81414, 0xc6336407, 40000, 53, ProtoUDP) {
		t.Fatalf("untagged frame: not its 5-tuple's hash")
	}
	for _, tags := range [][]uint16{{EtherTypeVLAN}, {EtherTypeQinQ, EtherTypeVLAN}} {
		f := eth(tags...)
		if got := FlowHashFrame(f, int(L3Offset(f))); got != want {
			t.Errorf("tags %#x: hash %#x, want the untagged frame's %#x", tags, got, want)
		}
		if got := FlowHashFrame(f, EthernetLen); got == want {
			t.Errorf("tags %#x: hashed at 14 the frame still hashes as its IP flow; the test shows nothing", tags)
		}
	}
}

func TestL3OffsetNoAlloc(t *testing.T) {
	f := make([]byte, 64)
	binary.BigEndian.PutUint16(f[12:], EtherTypeVLAN)
	binary.BigEndian.PutUint16(f[16:], EtherTypeIPv4)
	if n := testing.AllocsPerRun(100, func() { L3Offset(f) }); n != 0 {
		t.Errorf("%v allocations", n)
	}
}

// BenchmarkL3Offset: what the receiving drivers add per frame, untagged
// (the inlined check) and behind one and two tags; cpu-ns/op is the
// thread's CPU time (the machine is shared).
//
//	go test -run XXX -bench BenchmarkL3Offset -count 5 ./packet/
func BenchmarkL3Offset(b *testing.B) {
	for _, c := range []struct {
		name string
		tags []uint16
	}{{"untagged", nil}, {"802.1Q", []uint16{EtherTypeVLAN}}, {"QinQ", []uint16{EtherTypeQinQ, EtherTypeVLAN}}} {
		f := make([]byte, 12, 64)
		for _, ty := range c.tags {
			f = binary.BigEndian.AppendUint16(f, ty)
			f = append(f, 0, 10)
		}
		f = binary.BigEndian.AppendUint16(f, EtherTypeIPv4)
		f = f[:60]
		b.Run(c.name, func(b *testing.B) {
			runtime.LockOSThread()
			defer runtime.UnlockOSThread()
			var s uint16
			cpu0 := cputime.Thread()
			for range b.N {
				s += L3Offset(f)
			}
			b.ReportMetric(float64((cputime.Thread()-cpu0).Nanoseconds())/float64(b.N), "cpu-ns/op")
			l3Sink = s
		})
	}
}

var l3Sink uint16
