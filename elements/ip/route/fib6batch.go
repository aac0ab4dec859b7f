package route

import (
	"math/bits"

	"github.com/junction-dataplane/junction/packet"
)

// lookup6Batch is lookup6 for every packet of pkts (each with a full IPv6
// header at its L3 offset), writing the values to out. The walks are
// interleaved level by level: one packet's next node depends on the
// previous, but the packets' walks are independent, so stepping all of
// them one level at a time lets the CPU overlap them instead of waiting
// on each chain in turn (IPv6 routes of /48 walk 6 levels).
func (f *fib) lookup6Batch(pkts []*packet.Packet, out []uint16) {
	const chunk = 64
	var nodes [chunk]*node6
	var dsts [chunk]*[16]byte
	for base := 0; base < len(pkts); base += chunk {
		m := min(chunk, len(pkts)-base)
		o := out[base : base+m]
		for i := 0; i < m; i++ {
			p := pkts[base+i]
			dsts[i] = (*[16]byte)(p.Data[int(p.L3)+24:])
			nodes[i] = f.root6
			o[i] = f.def6
		}
		for lvl := 0; lvl < 16; lvl++ {
			active := 0
			for i := 0; i < m; i++ {
				n := nodes[i]
				if n == nil {
					continue
				}
				b := dsts[i][lvl]
				if v := n.val[b]; v != 0 {
					o[i] = v
				}
				w := n.bits[b>>6]
				bit := uint64(1) << (b & 63)
				if w&bit == 0 {
					nodes[i] = nil
					continue
				}
				nodes[i] = n.kids[int(n.rank[b>>6])+bits.OnesCount64(w&(bit-1))]
				active++
			}
			if active == 0 {
				break
			}
		}
	}
}
