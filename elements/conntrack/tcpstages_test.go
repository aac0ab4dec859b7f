package conntrack_test

import (
	"encoding/binary"
	"os"
	"runtime"
	"strconv"
	"testing"
	"time"

	ct "github.com/junction-dataplane/junction/elements/conntrack/cttest"
	"github.com/junction-dataplane/junction/elements/elementtest"
	"github.com/junction-dataplane/junction/internal/cputime"
	"github.com/junction-dataplane/junction/packet"
)

// BenchmarkConntrackStages measures what each packet of a short
// connection costs Conntrack alone (window tracking on) in a full table:
// 1M entries (JUNCTION_CT_CAPACITY) held by one-packet UDP flows, so every
// new flow evicts. proto=udp is one packet a connection (stage "new");
// proto=tcp a handshake and a close (SYN; SYN/ACK; ACK; FIN/ACK; ACK;
// FIN/ACK; ACK). b.N connections go through in groups of 4096, stage by
// stage, each stage's packets pushed in batches of 64 and timed alone,
// the frames written before the clock starts; the clock is the thread's
// CPU time (the machine is shared: time preempted is left out). Metrics:
// ns per packet of
// each stage (new-ns and syn-ns are the cost of a new flow, the others of
// finding an existing one and moving its state; fin1 and ack2 move the
// connection to the evictable list), and conn-ns, their sum per
// connection.
//
//	go test ./elements/conntrack -run xxx -bench ConntrackStages -benchtime 300000x
func BenchmarkConntrackStages(b *testing.B) {
	b.Run("proto=udp", func(b *testing.B) { benchStages(b, false) })
	b.Run("proto=tcp", func(b *testing.B) { benchStages(b, true) })
}

func benchStages(b *testing.B, tcp bool) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	capacity := 1 << 20
	if v, err := strconv.Atoi(os.Getenv("JUNCTION_CT_CAPACITY")); err == nil && v > 0 {
		capacity = v
	}
	const group = 4096
	h := elementtest.New(b, "Conntrack", tcpBenchConfig(capacity), &elementtest.Options{Sink: true, PoolSize: group + 256})

	// Fill: UDP from 172.16.0.0 + i, one packet each (unassured).
	udp := ct.Frame(ct.F{Proto: "udp", Src: "172.16.0.0", Dst: sv, Sport: 5000, Dport: 53})
	batch := packet.NewBatch(64)
	for i := 0; i < capacity; i += 64 {
		batch.Reset()
		for j := i; j < min(i+64, capacity); j++ {
			p := h.Pool.Get()
			p.SetFrame(udp)
			binary.BigEndian.PutUint32(p.Data[14+12:], 0xac100000+uint32(j))
			batch.Add(p)
		}
		h.Element.Push(0, batch)
	}
	if n := h.Counter("entries"); n != uint64(capacity) {
		b.Fatalf("%d entries after filling %d", n, capacity)
	}

	type stage struct {
		name  string
		seg   ct.Seg
		reply bool // from the server: the client's address is the destination
	}
	c2s := func(flags uint8, seq, ack uint32, win uint16, ws int, sp bool) ct.Seg {
		return ct.Seg{Src: "10.0.0.0", Dst: sv, Sport: 40000, Dport: 80, Flags: flags, Seq: seq, Ack: ack, Win: win, WScale: ws, SackPerm: sp}
	}
	s2c := func(flags uint8, seq, ack uint32, win uint16, ws int, sp bool) ct.Seg {
		return ct.Seg{Src: sv, Dst: "10.0.0.0", Sport: 80, Dport: 40000, Flags: flags, Seq: seq, Ack: ack, Win: win, WScale: ws, SackPerm: sp}
	}
	stages := []stage{
		{"syn", c2s(ct.SYN, cISN, 0, 64240, 7, true), false},
		{"synack", s2c(ct.SYN|ct.ACK, sISN, cISN+1, 65160, 7, true), true},
		{"ack", c2s(ct.ACK, cISN+1, sISN+1, 502, -1, false), false},
		{"fin1", c2s(ct.FIN|ct.ACK, cISN+1, sISN+1, 502, -1, false), false},
		{"ack1", s2c(ct.ACK, sISN+1, cISN+2, 509, -1, false), true},
		{"fin2", s2c(ct.FIN|ct.ACK, sISN+1, cISN+2, 509, -1, false), true},
		{"ack2", c2s(ct.ACK, cISN+2, sISN+2, 502, -1, false), false},
	}
	frames := make([][]byte, len(stages))
	for i, s := range stages {
		frames[i] = ct.TCPSeg(s.seg)
	}
	if !tcp {
		stages = []stage{{name: "new"}}
		frames = [][]byte{ct.Frame(ct.F{Proto: "udp", Src: "10.0.0.0", Dst: sv, Sport: 40000, Dport: 53})}
	}
	pkts := make([]*packet.Packet, group)
	spent := make([]time.Duration, len(stages))
	var conn uint32 // connection number: client 10.0.0.0 + low 24 bits, port 40000 + the rest
	b.ReportAllocs()
	b.ResetTimer()
	for left := b.N; left > 0; {
		n := min(left, group)
		left -= n
		for si, s := range stages {
			b.StopTimer()
			for i := range n {
				c := conn + uint32(i)
				p := h.Pool.Get()
				p.SetFrame(frames[si])
				off := 14 + 12
				if s.reply {
					off = 14 + 16
				}
				binary.BigEndian.PutUint32(p.Data[off:], 0x0a000000|c&0xffffff)
				port := uint16(40000 + c>>24)
				if s.reply {
					binary.BigEndian.PutUint16(p.Data[34+2:], port)
				} else {
					binary.BigEndian.PutUint16(p.Data[34:], port)
				}
				pkts[i] = p
			}
			b.StartTimer()
			t0 := cputime.Thread()
			for i := 0; i < n; i += 64 {
				batch.Reset()
				for _, p := range pkts[i:min(i+64, n)] {
					batch.Add(p)
				}
				h.Element.Push(0, batch)
			}
			spent[si] += cputime.Thread() - t0
		}
		conn += uint32(n)
	}
	b.StopTimer()
	var sum float64
	for si, s := range stages {
		v := float64(spent[si].Nanoseconds()) / float64(b.N)
		sum += v
		b.ReportMetric(v, s.name+"-ns")
	}
	b.ReportMetric(sum, "conn-ns")
	for _, name := range []string{"invalid: tcp state", "invalid: tcp window", "invalid: tcp flags", "table full"} {
		if v := h.Counter(name); v != 0 {
			b.Fatalf("%s = %d", name, v)
		}
	}
	if e := h.Counter("evicted") + h.Counter("expired"); e < uint64(b.N) {
		b.Fatalf("%d evicted for %d connections: the table was not full", e, b.N)
	}
}
