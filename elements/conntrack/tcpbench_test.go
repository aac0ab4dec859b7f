package conntrack_test

import (
	"math/rand/v2"
	"testing"

	ct "github.com/junction-dataplane/junction/elements/conntrack/cttest"
	"github.com/junction-dataplane/junction/elements/elementtest"
)

// BenchmarkConntrackTCP: established TCP flows, client data and server
// ACKs in random flow order, after a handshake each (window scale 7). The
// segments are replayed, so the window checks see each flow's data
// again: every one takes the full path (all four checks and the updates)
// and none is invalid (checked).
func BenchmarkConntrackTCP(b *testing.B) {
	for _, flows := range []int{64, 100000} {
		b.Run(map[int]string{64: "flows=64", 100000: "flows=100k"}[flows], func(b *testing.B) {
			h := elementtest.New(b, "Conntrack", tcpBenchConfig(flows+flows/4), &elementtest.Options{Sink: true})
			// Client i: 10.x.y.z:40000 (its address from i), server sv:80.
			tmpl := func(s ct.Seg) func(i int) []byte {
				base := ct.TCPSeg(s)
				return func(i int) []byte {
					f := append([]byte(nil), base...)
					a := 14 + 12 // the client's address: source from the client, destination from the server
					if s.Src != "10.0.0.0" {
						a = 14 + 16
					}
					f[a+1], f[a+2], f[a+3] = byte(i>>16), byte(i>>8), byte(i)
					return f
				}
			}
			syn := tmpl(ct.Seg{Src: "10.0.0.0", Dst: sv, Sport: 40000, Dport: 80, Flags: ct.SYN, Seq: cISN, Win: 64240, WScale: 7, SackPerm: true})
			synack := tmpl(ct.Seg{Src: sv, Dst: "10.0.0.0", Sport: 80, Dport: 40000, Flags: ct.SYN | ct.ACK, Seq: sISN, Ack: cISN + 1, Win: 65160, WScale: 7, SackPerm: true})
			ack := tmpl(ct.Seg{Src: "10.0.0.0", Dst: sv, Sport: 40000, Dport: 80, Flags: ct.ACK, Seq: cISN + 1, Ack: sISN + 1, Win: 502, WScale: -1, Timestamps: true})
			data := tmpl(ct.Seg{Src: "10.0.0.0", Dst: sv, Sport: 40000, Dport: 80, Flags: ct.ACK | ct.PSH, Seq: cISN + 1, Ack: sISN + 1, Win: 502, Payload: 100, WScale: -1, Timestamps: true})
			sack := tmpl(ct.Seg{Src: sv, Dst: "10.0.0.0", Sport: 80, Dport: 40000, Flags: ct.ACK, Seq: sISN + 1, Ack: cISN + 101, Win: 509, WScale: -1, Timestamps: true})
			var fs [][]byte
			for _, step := range []func(int) []byte{syn, synack, ack} {
				fs = fs[:0]
				for i := range flows {
					fs = append(fs, step(i))
				}
				for i := 0; i < flows; i += 64 {
					h.AllocsPerBatch(1, fs[i:min(i+64, flows)]...)
				}
			}
			ds := make([][]byte, 2*flows)
			for i := range flows {
				ds[2*i], ds[2*i+1] = data(i), sack(i)
			}
			rng := rand.New(rand.NewPCG(1, 1))
			perm := make([][]byte, 64*1024)
			for i := 0; i < len(perm); i += 2 {
				j := rng.IntN(flows)
				perm[i], perm[i+1] = ds[2*j], ds[2*j+1]
			}
			benchRotating(b, h, perm)
			b.StopTimer()
			for _, name := range []string{"invalid: tcp state", "invalid: tcp window", "new"} {
				if n := h.Counter(name); n != 0 && name != "new" || name == "new" && n != uint64(flows) {
					b.Fatalf("%s = %d", name, n)
				}
			}
		})
	}
}
