package main

import (
	"errors"
	"fmt"
	"io"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/BurntSushi/toml"

	"github.com/junction-dataplane/junction/elements"
	"github.com/junction-dataplane/junction/packet"
	"github.com/junction-dataplane/junction/pipeline"
	"github.com/junction-dataplane/junction/pipeline/statstable"
)

const benchUsage = `usage: forwarder bench -element TYPE [-set key=value ...] [-traffic gen-keys] [-batch N] [-duration D]
       forwarder bench -plugin PATH -element NAME [-set key=value ...] [...]
       forwarder bench -config FILE [-duration D]
       (any form takes -json: one JSON object, benchmarks/result's schema)

Runs one element (built-in, in-process custom, or a plugin's) on synthetic
traffic from the gen driver, on one worker, and prints ns/packet, Mpps,
packets per output port and allocations per packet. Each output port feeds
a Discard, so the figures are the generator + the element + a free.
With -config, runs a whole graph on one worker and prints the per-element
table.

-set values are TOML (numbers, booleans, ["a", "b"]); anything else is taken
as a string. With -plugin, -set keys go to the plugin element's config table,
except on_failure, timeout and sha256, which are the Plugin element's own.
-traffic is a comma-separated list of gen keys: "size=128,flows=1024,proto=tcp".

Flags:
`

// multiFlag collects a repeatable flag.
type multiFlag []string

func (m *multiFlag) String() string     { return strings.Join(*m, " ") }
func (m *multiFlag) Set(s string) error { *m = append(*m, s); return nil }

func benchCmd(args []string, stdout, stderr io.Writer) error {
	fs := newFlags("bench", stderr)
	fs.Usage = func() {
		fmt.Fprint(stderr, benchUsage)
		fs.PrintDefaults()
	}
	element := fs.String("element", "", "element type (with -plugin: the element's name inside the plugin)")
	var sets multiFlag
	fs.Var(&sets, "set", "key=value for the element (repeatable)")
	traffic := fs.String("traffic", "", `gen driver keys for the traffic, e.g. "size=64,flows=256,dst=10.16.0.0/12"`)
	batch := fs.Int("batch", packet.DefaultBatch, "packets per batch (1.."+strconv.Itoa(packet.MaxBatch)+")")
	duration := fs.Duration("duration", 2*time.Second, "how long to measure")
	pluginPath := fs.String("plugin", "", "plugin executable: benchmark its element through the Plugin element")
	config := fs.String("config", "", "benchmark a whole graph file instead")
	asJSON := fs.Bool("json", false, "print one JSON object (benchmarks/result's schema) instead of the text")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return usageErrorf("unexpected arguments: %s", strings.Join(fs.Args(), " "))
	}
	if *duration <= 0 {
		return usageErrorf("-duration must be positive")
	}
	origin := benchOriginNow()
	if *config != "" {
		if *element != "" || *pluginPath != "" || len(sets) > 0 || *traffic != "" {
			return usageErrorf("-config benchmarks a whole graph: -element, -plugin, -set and -traffic do not apply")
		}
		g, err := pipeline.Load(*config)
		if err != nil {
			return err
		}
		return benchGraph(g, *duration, "", origin, stdout, stderr, benchJSON(*asJSON, "graph "+*config, args))
	}
	if *element == "" {
		fs.Usage()
		return errUsage
	}
	if *batch < 1 || *batch > packet.MaxBatch {
		return usageErrorf("-batch %d: want 1..%d", *batch, packet.MaxBatch)
	}
	// What goes wrong from here to a built graph is in the flags (an
	// unknown type, a malformed or invalid -set or -traffic): wrong
	// usage, except what a plugin's program says when it starts.
	src, err := benchGraphText(*element, *pluginPath, sets, *traffic, *batch)
	if err != nil {
		if *pluginPath == "" {
			return usageErrorf("%v", err)
		}
		return err
	}
	g, err := pipeline.Parse("bench", []byte(src))
	if err != nil {
		err = fmt.Errorf("%w\n(the generated graph was:\n%s)", err, src)
		if *pluginPath == "" {
			return usageErrorf("%v", err)
		}
		return err
	}
	return benchGraph(g, *duration, "bench", origin, stdout, stderr, benchJSON(*asJSON, "element "+*element, args))
}

// tomlValue renders a -set or -traffic value: TOML if it parses as a TOML
// value, else a quoted string.
func tomlValue(v string) string {
	var m map[string]any
	if _, err := toml.Decode("v = "+v, &m); err == nil {
		return v
	}
	return strconv.Quote(v)
}

// tomlMessage is a TOML library error in Junction's words: without the
// "toml: " prefix and the library's line numbers of a one-line document.
func tomlMessage(err error) string {
	msg := err.Error()
	msg = strings.TrimPrefix(msg, "toml: ")
	if _, rest, ok := strings.Cut(msg, "): "); ok && strings.HasPrefix(msg, "line ") {
		msg = rest
	}
	return msg
}

func keyValue(kv string) (string, string, error) {
	k, v, ok := strings.Cut(kv, "=")
	k = strings.TrimSpace(k)
	if !ok || k == "" {
		return "", "", fmt.Errorf("%q: want key=value", kv)
	}
	if strings.Trim(k, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-") != "" {
		return "", "", fmt.Errorf("%q: a key is letters, digits, _ and -", k)
	}
	return k, tomlValue(strings.TrimSpace(v)), nil
}

// benchGraphText writes the graph: gen device → element → one Discard per
// output port.
func benchGraphText(typ, plugin string, sets []string, traffic string, batch int) (string, error) {
	var b strings.Builder
	fmt.Fprintf(&b, "[forwarder]\nworkers = 1\nbatch = %d\n\n[devices.gen]\ndriver = \"gen\"\n", batch)
	if traffic != "" {
		for _, kv := range strings.Split(traffic, ",") {
			k, v, err := keyValue(kv)
			if err != nil {
				return "", usageErrorf("-traffic: %v", err)
			}
			fmt.Fprintf(&b, "%s = %s\n", k, v)
		}
	}
	var own, inner []string
	for _, kv := range sets {
		k, v, err := keyValue(kv)
		if err != nil {
			return "", usageErrorf("-set: %v", err)
		}
		line := k + " = " + v
		if plugin != "" && k != "on_failure" && k != "timeout" && k != "sha256" {
			inner = append(inner, line)
		} else {
			own = append(own, line)
		}
	}
	elem := "\n[elements.bench]\n"
	if plugin != "" {
		elem += fmt.Sprintf("type = \"Plugin\"\npath = %s\nelement = %s\n", strconv.Quote(plugin), strconv.Quote(typ))
	} else {
		elem += fmt.Sprintf("type = %s\n", strconv.Quote(typ))
	}
	for _, l := range own {
		elem += l + "\n"
	}
	if plugin != "" && len(inner) > 0 {
		elem += "[elements.bench.config]\n" + strings.Join(inner, "\n") + "\n"
	}
	nout, err := benchOutputs(typ, plugin, elem)
	if err != nil {
		return "", err
	}
	b.WriteString(elem)
	b.WriteString("\n[graph]\nlinks = [\n  \"FromDevice(gen) -> bench\",\n")
	for i := 0; i < nout; i++ {
		fmt.Fprintf(&b, "  \"bench[%d] -> port%d :: Discard\",\n", i, i)
	}
	b.WriteString("]\n")
	return b.String(), nil
}

// benchOutputs decodes the element's table to learn its output count
// (which may depend on the config, e.g. Classifier's rules, or on the
// plugin), so that every output can be given its own Discard.
func benchOutputs(typ, plugin, table string) (int, error) {
	tname := typ
	if plugin != "" {
		tname = "Plugin"
	}
	t, ok := elements.Lookup(tname)
	if !ok {
		msg := fmt.Sprintf("unknown element type %q", typ)
		if s := elements.SuggestType(typ); s != "" {
			msg += fmt.Sprintf(", did you mean %q?", s)
		}
		return 0, errors.New(msg + " (forwarder elements lists them; -plugin PATH for a plugin's element)")
	}
	if t.In < 1 {
		return 0, fmt.Errorf("%s has no input: bench measures elements that receive packets", typ)
	}
	if t.Out >= 0 {
		return t.Out, nil
	}
	var doc map[string]map[string]map[string]any
	if _, err := toml.Decode(table, &doc); err != nil {
		return 0, fmt.Errorf("-set: %s", tomlMessage(err))
	}
	tbl := doc["elements"]["bench"]
	delete(tbl, "type")
	cfg, err := pipeline.DecodeConfig(t, tbl)
	if err != nil {
		return 0, fmt.Errorf("-set: %s: %w", typ, err)
	}
	_, out := t.Ports(cfg)
	return out, nil
}

// benchGraph runs g on one worker for d (or until its sources are
// drained) and prints the figures, headed by where they were measured
// (origin); focus names the element under test (empty: the whole graph's
// table). The drivers' and the runtime's messages (a fast path falling
// back, a failed pin) go to logw.
func benchGraph(g *pipeline.Graph, d time.Duration, focus string, origin benchOrigin, w, logw io.Writer, js *benchJSONOut) error {
	r, err := pipeline.Build(g, pipeline.Options{Workers: 1, NoPin: true, TimingEvery: 4, Log: logw})
	if err != nil {
		return err
	}
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	// Warm up (caches, branch predictors, the plugin's first batches).
	for t0 := time.Now(); time.Since(t0) < d/10; {
		r.Round(0)
	}
	r.Publish()
	before := r.Snapshot()
	var m0, m1 runtime.MemStats
	runtime.ReadMemStats(&m0)
	t0 := time.Now()
	pkts, idle := 0, 0
	for time.Since(t0) < d && idle < 100000 {
		for i := 0; i < 64; i++ {
			n := r.Round(0)
			pkts += n
			if n == 0 {
				idle++
			} else {
				idle = 0
			}
		}
	}
	elapsed := time.Since(t0)
	runtime.ReadMemStats(&m1)
	if err := r.Close(); err != nil {
		return err
	}
	after := r.Snapshot()
	if pkts == 0 {
		return errors.New("no packets received: do the graph's sources produce traffic?")
	}
	// What the measured interval did, without the warm-up: the table's
	// counts and the packet count below are the same packets.
	interval := after.Since(before)
	interval.Uptime = elapsed
	ns := float64(elapsed.Nanoseconds()) / float64(pkts)
	if js != nil {
		return js.write(w, g, origin, pkts, elapsed, m1.Mallocs-m0.Mallocs, before, after)
	}
	origin.write(w)
	fmt.Fprintf(w, "%d packets in %v on 1 worker, batch %d\n", pkts, elapsed.Round(time.Millisecond), g.Batch)
	fmt.Fprintf(w, "  %.1f ns/packet  %.2f Mpps  %.4f allocs/packet  (whole graph: generator, elements, sinks)\n",
		ns, float64(pkts)/elapsed.Seconds()/1e6, float64(m1.Mallocs-m0.Mallocs)/float64(pkts))
	delta := func(name string) (pipeline.ElementStats, pipeline.ElementStats) {
		var a, b pipeline.ElementStats
		for _, e := range before.Elements {
			if e.Element == name {
				a = e
			}
		}
		for _, e := range after.Elements {
			if e.Element == name {
				b = e
			}
		}
		return a, b
	}
	if focus == "" {
		fmt.Fprintf(w, "  (one worker, its rounds driven by bench: no busy or idle time to report)\n")
		return statstable.Render(w, interval, statstable.Options{NoWorkers: true})
	}
	a, b := delta(focus)
	tp := b.TimedPackets - a.TimedPackets
	self := 0.0
	if tp > 0 {
		self = float64(b.TimedNanos-a.TimedNanos) / float64(tp)
	}
	fmt.Fprintf(w, "  element %s (%s): %.1f ns/packet self time (sampled)\n", focus, b.Type, self)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "  output\tpackets\tshare\t")
	total := b.Packets - a.Packets
	for i := 0; ; i++ {
		pa, pb := delta("port" + strconv.Itoa(i))
		if pb.Element == "" {
			break
		}
		n := pb.Packets - pa.Packets
		fmt.Fprintf(tw, "  %d\t%d\t%.1f%%\t\n", i, n, 100*float64(n)/float64(max(total, 1)))
	}
	tw.Flush()
	var drops []string
	prev := map[string]uint64{}
	for _, c := range a.Counters {
		prev[c.Name] = c.Value
	}
	for _, c := range b.Counters {
		if v := c.Value - prev[c.Name]; v > 0 {
			kind := "counter"
			switch {
			case c.Drop:
				kind = "drop"
			case c.Consumed:
				kind = "consumed"
			}
			drops = append(drops, fmt.Sprintf("  %s %q: %d", kind, c.Name, v))
		}
	}
	sort.Strings(drops)
	for _, l := range drops {
		fmt.Fprintln(w, l)
	}
	return nil
}
