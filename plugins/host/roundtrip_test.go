package host_test

import (
	"bytes"
	"encoding/binary"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/BurntSushi/toml"

	"github.com/junction-dataplane/junction/elements"
	_ "github.com/junction-dataplane/junction/elements/all"
	"github.com/junction-dataplane/junction/elements/elementtest"
	"github.com/junction-dataplane/junction/packet"
	"github.com/junction-dataplane/junction/plugins/host"
)

// randomFrames makes a mix of frames: valid IPv4/UDP with random TTLs and
// addresses, some with a broken checksum, bad IHL, truncated, non-IP, and
// random bytes of random lengths.
func randomFrames(r *rand.Rand, n int) [][]byte {
	out := make([][]byte, n)
	for i := range out {
		switch k := r.IntN(10); {
		case k < 6:
			out[i] = ipv4UDP(r, uint8(r.IntN(4)), 20+r.IntN(200))
			if k == 5 {
				out[i][14+10] ^= 0x5a // checksum
			}
		case k == 6:
			f := ipv4UDP(r, 64, 30)
			f[14] = 0x43 // IHL 3
			out[i] = f
		case k == 7:
			f := ipv4UDP(r, 64, 30)
			out[i] = f[:14+r.IntN(20)]
		default:
			f := make([]byte, r.IntN(300))
			for j := range f {
				f[j] = byte(r.Uint32())
			}
			out[i] = f
		}
	}
	return out
}

func ipv4UDP(r *rand.Rand, ttl uint8, payload int) []byte {
	f := make([]byte, 14+20+8+payload)
	copy(f[0:6], []byte{2, 0, 0, 0, 1, 1})
	copy(f[6:12], []byte{2, 0, 0, 0, 1, 2})
	binary.BigEndian.PutUint16(f[12:], 0x0800)
	ip := f[14:]
	ip[0] = 0x45
	binary.BigEndian.PutUint16(ip[2:], uint16(20+8+payload))
	ip[8] = ttl
	ip[9] = 17
	binary.BigEndian.PutUint32(ip[12:], 0x0a010000|r.Uint32()&0xffff)
	binary.BigEndian.PutUint32(ip[16:], 0x0a100000|r.Uint32()&0xfffff)
	binary.BigEndian.PutUint16(ip[10:], 0)
	binary.BigEndian.PutUint16(ip[10:], packet.Checksum(ip[:20]))
	binary.BigEndian.PutUint16(ip[20:], uint16(r.Uint32()))
	binary.BigEndian.PutUint16(ip[22:], 53)
	binary.BigEndian.PutUint16(ip[24:], uint16(8+payload))
	return f
}

// TestRoundTripBuiltin runs built-in elements in process and the same
// elements inside a plugin (sdk.Builtin) on the same random traffic: every
// output port must get byte-identical frames in the same order.
func TestRoundTripBuiltin(t *testing.T) {
	cases := []struct {
		typ string
		cfg func() any // the built-in's config
		tbl map[string]any
	}{
		{"DecTTL", nil, nil},
		{"CheckIPHeader", nil, nil},
		{"EtherRewrite", nil, map[string]any{"src": "02:aa:00:00:00:01", "dst": "02:bb:00:00:00:02"}},
		{"Classifier", nil, map[string]any{"rules": []any{"udp and dst port 53", "ip", "-"}}},
	}
	for _, c := range cases {
		t.Run(c.typ, func(t *testing.T) {
			pcfg := &host.Config{Path: pluginPath("faulty"), Element: c.typ, Config: c.tbl, OnFailure: "drop", Timeout: slackTimeout}
			plug := elementtest.New(t, "Plugin", pcfg, &elementtest.Options{PoolSize: 1024})
			builtin := elementtest.New(t, c.typ, builtinConfig(t, c.typ, c.tbl), &elementtest.Options{PoolSize: 1024})
			if len(plug.Outs) != len(builtin.Outs) {
				t.Fatalf("plugin has %d outputs, built-in %d", len(plug.Outs), len(builtin.Outs))
			}
			r := rand.New(rand.NewPCG(1, uint64(len(c.typ))))
			total := 0
			for round := 0; round < 20; round++ {
				frames := randomFrames(r, 1+r.IntN(64))
				total += len(frames)
				plug.Push(0, frames...)
				builtin.Push(0, frames...)
			}
			got := 0
			for port := range builtin.Outs {
				want, have := builtin.Outs[port].Frames(), plug.Outs[port].Frames()
				got += len(have)
				if len(want) != len(have) {
					t.Fatalf("port %d: built-in sent %d frames, plugin %d", port, len(want), len(have))
				}
				for i := range want {
					if !bytes.Equal(want[i], have[i]) {
						t.Fatalf("port %d frame %d differs:\nbuilt-in %x\nplugin   %x", port, i, want[i], have[i])
					}
				}
			}
			if bd, pd := builtin.Stats.Drops(), plug.Counter("dropped inside the plugin"); bd != pd {
				t.Errorf("built-in dropped %d, plugin %d", bd, pd)
			}
			if got == 0 {
				t.Fatal("nothing came out")
			}
			t.Logf("%d frames, %d out, plugin counters %v", total, got, plug.Stats.Counters())
			plug.CheckNoLeak()
		})
	}
}

// builtinConfig decodes tbl into a fresh config of the built-in type, via
// TOML text (as the plugin side decodes it).
func builtinConfig(t *testing.T, typ string, tbl map[string]any) any {
	t.Helper()
	et, ok := elements.Lookup(typ)
	if !ok {
		t.Fatalf("no type %s", typ)
	}
	if tbl == nil || et.NewConfig == nil {
		return nil
	}
	var b bytes.Buffer
	if err := toml.NewEncoder(&b).Encode(tbl); err != nil {
		t.Fatal(err)
	}
	cfg := et.NewConfig()
	if _, err := toml.Decode(b.String(), cfg); err != nil {
		t.Fatal(err)
	}
	return cfg
}

// slackTimeout is the per-batch timeout of tests whose subject is not the
// timeout: generous, so that a loaded CI machine (parallel test binaries on
// two cores) cannot turn a slow batch into an on_failure drop.
const slackTimeout = 5 * time.Second
