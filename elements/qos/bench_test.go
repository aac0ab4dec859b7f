package qos

import (
	"reflect"
	"runtime"
	"strconv"
	"testing"
	"time"

	"github.com/junction-dataplane/junction/elements"
	"github.com/junction-dataplane/junction/elements/elementtest"
	"github.com/junction-dataplane/junction/internal/cputime"
	"github.com/junction-dataplane/junction/packet"
)

// benchFrames: 64 UDP packets of 64..1500 bytes from 64 hosts.
func benchFrames() [][]byte {
	var fs [][]byte
	for i := 0; i < 64; i++ {
		fs = append(fs, frame4("10.0.0."+strconv.Itoa(i+1), "10.9.0.1", 64+i*22, 0))
	}
	return fs
}

// nullSink keeps nothing and frees nothing: the benchmark's packets go
// round and round, so that only the element's own work is timed.
type nullSink struct{}

func (nullSink) Push(int, *packet.Batch) {}

// benchPush times Push of one batch of frames, the same packets every
// time, every output connected to a nullSink (so no colour's action may
// be drop). It reports ns/pkt.
func benchPush(b *testing.B, h *elementtest.Harness, frames [][]byte) {
	benchLoop(b, h, frames, func() {})
}

// benchLoop connects every output of h to a nullSink, makes packets of
// frames once, and times pushing them as one batch (then after, between
// batches) again and again.
func benchLoop(b *testing.B, h *elementtest.Harness, frames [][]byte, after func()) {
	for _, o := range h.Outputs {
		o.Connect(nullSink{}, 0, &elements.Stats{})
	}
	batch := packet.NewBatch(len(frames))
	var pkts []*packet.Packet
	for _, f := range frames {
		pkts = append(pkts, h.Packet(f))
	}
	b.ReportAllocs()
	cpu := startCPU(b)
	n := 0
	for b.Loop() {
		batch.Pkts = append(batch.Pkts[:0], pkts...)
		h.Element.Push(0, batch)
		after()
		n += len(pkts)
	}
	cpu.report(n)
}

// cpuClock reports a benchmark's time per packet twice: wall clock
// (ns/pkt) and the benchmark thread's CPU time (cpu-ns/pkt). On a shared,
// loaded machine the thread may run a small share of the wall time; its
// CPU time is what the element costs.
type cpuClock struct {
	b  *testing.B
	t0 time.Duration
}

func startCPU(b *testing.B) cpuClock {
	runtime.LockOSThread()
	b.ResetTimer()
	return cpuClock{b, cputime.Thread()}
}

func (c cpuClock) report(n int) {
	cpu := cputime.Thread() - c.t0
	c.b.StopTimer()
	runtime.UnlockOSThread()
	c.b.ReportMetric(float64(c.b.Elapsed().Nanoseconds())/float64(n), "ns/pkt")
	c.b.ReportMetric(float64(cpu.Nanoseconds())/float64(n), "cpu-ns/pkt")
}

// The policer's hot path per packet: metering, the action, the output.
// Recorded in benchmarks/qos.md.
func BenchmarkPolicer(b *testing.B) {
	for _, bc := range []struct {
		name string
		cfg  func(c *PolicerConfig)
	}{
		{"srTCM/element", func(c *PolicerConfig) {}},
		{"srTCM/element/remark", func(c *PolicerConfig) { c.ExcessBurst = 64000; c.Yellow = "dscp af12" }},
		{"trTCM/element", func(c *PolicerConfig) { c.PeakRate = 2 * c.Rate }},
		{"trTCM/element/color-aware", func(c *PolicerConfig) { c.PeakRate = 2 * c.Rate; c.ColorAware = true }},
		{"srTCM/src32", func(c *PolicerConfig) { c.Key = "src/32" }},
		{"srTCM/flow", func(c *PolicerConfig) { c.Key = "flow" }},
	} {
		b.Run(bc.name, func(b *testing.B) {
			// A rate the traffic exceeds: every colour's path runs.
			cfg := defaults(1_000_000_000)
			cfg.Red = "out 1"
			bc.cfg(cfg)
			if err := cfg.Validate(); err != nil {
				b.Fatal(err)
			}
			h := elementtest.New(b, "Policer", cfg, nil)
			benchPush(b, h, benchFrames())
		})
	}
}

// BenchmarkShaper: batches through a shaper, each packet queued and
// released (the clock advances by a batch's worth of the rate between
// batches, so every packet waits in its band and leaves by Wake, as when
// the offered load exceeds the rate), or passed at once (under the rate).
func BenchmarkShaper(b *testing.B) {
	for _, bc := range []struct {
		name   string
		prio   []string
		queued bool
	}{{"under rate", nil, false}, {"queued", nil, true}, {"queued/ef first", []string{"ef"}, true}} {
		b.Run(bc.name, func(b *testing.B) {
			cfg := shaperConfig(1_000_000_000)
			cfg.Priority = bc.prio
			fs := benchFrames()
			h := elementtest.New(b, "Shaper", cfg, nil)
			s := h.Element.(*Shaper)
			c := &clock{}
			s.now = c.now
			bytes := 0
			for _, f := range fs {
				bytes += len(f) - 14
			}
			perBatch := int64(bytes) * 8 // ns a batch takes at 1 Gbit/s
			if !bc.queued {
				perBatch *= 2
			}
			if bc.queued {
				s.tokens, s.last = 0, 0
			}
			benchLoop(b, h, fs, func() {
				c.t += perBatch
				s.Wake(c.t)
			})
			if bc.queued && h.Counter("delayed") == 0 || !bc.queued && h.Counter("delayed") != 0 {
				b.Fatalf("delayed %d", h.Counter("delayed"))
			}
		})
	}
}

// TestZeroAlloc: no allocation per batch in any of the elements.
func TestZeroAlloc(t *testing.T) {
	fs := benchFrames()
	for _, key := range []string{"element", "src/32", "dst/24", "flow"} {
		cfg := defaults(100_000_000)
		cfg.Key, cfg.Yellow, cfg.ExcessBurst, cfg.ColorAware = key, "dscp af12", 64000, key == "flow"
		h := elementtest.New(t, "Policer", cfg, &elementtest.Options{Sink: true})
		if a := h.AllocsPerBatch(200, fs...); a != 0 {
			t.Errorf("Policer key %s: %v allocations per batch", key, a)
		}
	}
	cfg := shaperConfig(1_000_000_000)
	cfg.Priority = []string{"ef"}
	h := elementtest.New(t, "Shaper", cfg, &elementtest.Options{Sink: true, PoolSize: 4096})
	s := h.Element.(*Shaper)
	if a := h.AllocsPerBatch(200, fs...); a != 0 {
		t.Errorf("Shaper: %v allocations per batch", a)
	}
	if a := testing.AllocsPerRun(100, func() { s.Wake(elements.Nanotime()) }); a != 0 {
		t.Errorf("Shaper.Wake: %v allocations", a)
	}
	h2 := elementtest.New(t, "SetDSCP", &SetDSCPConfig{DSCP: 46}, &elementtest.Options{Sink: true})
	if a := h2.AllocsPerBatch(200, fs...); a != 0 {
		t.Errorf("SetDSCP: %v allocations per batch", a)
	}
}

// TestDocs: every element of the family has a full manual whose keys are
// its config's toml keys in order, with the documented literal defaults.
func TestDocs(t *testing.T) {
	for _, name := range []string{"Policer", "Shaper", "SetDSCP"} {
		typ := mustLookup(name)
		d := typ.Doc
		for field, v := range map[string]string{"Synopsis": d.Synopsis, "Summary": d.Summary,
			"Ports": d.Ports, "Stats": d.Stats, "Example": d.Example, "Text": d.Text} {
			if v == "" {
				t.Errorf("%s: Doc.%s empty", name, field)
			}
		}
		cfg := reflect.ValueOf(typ.NewConfig()).Elem()
		if cfg.NumField() != len(d.Keys) {
			t.Fatalf("%s: %d config fields, %d documented keys", name, cfg.NumField(), len(d.Keys))
		}
		for i, k := range d.Keys {
			if tag := cfg.Type().Field(i).Tag.Get("toml"); tag != k.Name || k.Doc == "" {
				t.Errorf("%s: key %d documented %q, config %q", name, i, k.Name, tag)
			}
			f := cfg.Field(i)
			switch f.Kind() {
			case reflect.String:
				if k.Default != strconv.Quote(f.String()) && !k.Required {
					t.Errorf("%s: key %s default %s, config %q", name, k.Name, k.Default, f.String())
				}
			case reflect.Int:
				if k.Default != strconv.Itoa(int(f.Int())) {
					t.Errorf("%s: key %s default %s, config %d", name, k.Name, k.Default, f.Int())
				}
			}
		}
	}
}
