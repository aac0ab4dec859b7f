package host_test

import (
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/junction-dataplane/junction/elements/elementtest"
	"github.com/junction-dataplane/junction/plugins/host"
)

// BenchmarkOverhead measures the same element (DecTTL) compiled in and
// running in a plugin (sdk.Builtin), at batch sizes 1, 16, 64 and 256, on
// 64-byte frames. The plugin's overhead per packet is the difference of
// the ns/pkt figures at the same batch size.
func BenchmarkOverhead(b *testing.B) {
	host.SetLog(&syncBuf{})
	r := rand.New(rand.NewPCG(7, 7))
	var frames [][]byte
	for i := 0; i < 64; i++ {
		frames = append(frames, ipv4UDP(r, 64, 64-42))
	}
	for _, batch := range []int{1, 16, 64, 256} {
		opts := &elementtest.Options{Sink: true, Batch: batch, PoolSize: 2 * batch}
		b.Run(fmt.Sprintf("inprocess/batch=%d", batch), func(b *testing.B) {
			h := elementtest.New(b, "DecTTL", nil, opts)
			h.Bench(b, frames...)
		})
		b.Run(fmt.Sprintf("plugin/batch=%d", batch), func(b *testing.B) {
			cfg := &host.Config{Path: pluginPath("faulty"), Element: "DecTTL", OnFailure: "drop", Timeout: time.Second}
			h := elementtest.New(b, "Plugin", cfg, opts)
			h.Bench(b, frames...)
			if f := h.Counter("plugin failure"); f != 0 {
				b.Fatalf("%d packets failed", f)
			}
		})
	}
}
