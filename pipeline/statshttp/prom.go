package statshttp

import (
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/junction-dataplane/junction/pipeline"
)

// WritePrometheus writes snapshot s in the Prometheus text exposition
// format (what GET /metrics serves).
func WritePrometheus(w io.Writer, s *pipeline.Snapshot) error {
	pw := &promWriter{w: w}
	pw.family("junction_element_batches_total", "counter", "Batches received by an element instance.")
	for _, e := range s.Elements {
		pw.sample("junction_element_batches_total", e.Batches, "element", e.Element, "type", e.Type, "worker", itoa(e.Worker))
	}
	pw.family("junction_element_packets_total", "counter", "Packets received by an element instance.")
	for _, e := range s.Elements {
		pw.sample("junction_element_packets_total", e.Packets, "element", e.Element, "type", e.Type, "worker", itoa(e.Worker))
	}
	pw.family("junction_element_drops_total", "counter", "Packets an element instance lost, by reason (not what it consumed by design).")
	for _, e := range s.Elements {
		for _, c := range e.Counters {
			if c.Drop {
				pw.sample("junction_element_drops_total", c.Value, "element", e.Element, "type", e.Type, "worker", itoa(e.Worker), "reason", c.Name)
			}
		}
	}
	pw.family("junction_element_consumed_total", "counter", "Packets an element instance freed by design (Discard, ARP that needs no answer), by reason: not losses.")
	for _, e := range s.Elements {
		for _, c := range e.Counters {
			if c.Consumed {
				pw.sample("junction_element_consumed_total", c.Value, "element", e.Element, "type", e.Type, "worker", itoa(e.Worker), "reason", c.Name)
			}
		}
	}
	pw.family("junction_element_events_total", "counter", "Element-specific event counters (neither drops nor consumptions).")
	for _, e := range s.Elements {
		for _, c := range e.Counters {
			if !c.Drop && !c.Consumed {
				pw.sample("junction_element_events_total", c.Value, "element", e.Element, "type", e.Type, "worker", itoa(e.Worker), "counter", c.Name)
			}
		}
	}
	// Element time is measured in sampled rounds (one in TimingEvery):
	// the exported counters are the measured ones, which only grow;
	// ns/packet = rate(nanoseconds) / rate(timed packets).
	pw.family("junction_element_nanoseconds_total", "counter", "Self time of an element instance measured in timed rounds, nanoseconds.")
	for _, e := range s.Elements {
		pw.sample("junction_element_nanoseconds_total", e.TimedNanos, "element", e.Element, "type", e.Type, "worker", itoa(e.Worker))
	}
	pw.family("junction_element_timed_packets_total", "counter", "Packets an element instance received in timed rounds.")
	for _, e := range s.Elements {
		pw.sample("junction_element_timed_packets_total", e.TimedPackets, "element", e.Element, "type", e.Type, "worker", itoa(e.Worker))
	}
	pw.family("junction_worker_busy_seconds_total", "counter", "Time a worker spent on rounds that brought packets.")
	for _, ws := range s.Workers {
		pw.sampleFloat("junction_worker_busy_seconds_total", float64(ws.BusyNanos)/1e9, "worker", itoa(ws.Worker))
	}
	pw.family("junction_worker_timed_busy_seconds_total", "counter", "Busy time of the timed rounds (what element nanoseconds add up to).")
	for _, ws := range s.Workers {
		pw.sampleFloat("junction_worker_timed_busy_seconds_total", float64(ws.TimedBusyNanos)/1e9, "worker", itoa(ws.Worker))
	}
	pw.family("junction_worker_idle_seconds_total", "counter", "Time a worker spent on empty polls and backoff.")
	for _, ws := range s.Workers {
		pw.sampleFloat("junction_worker_idle_seconds_total", float64(ws.IdleNanos)/1e9, "worker", itoa(ws.Worker))
	}
	// Device counters: one family per counter name (junction_device_rx_total,
	// junction_device_tx_drops_total, ...), labelled by device.
	var names []string
	seen := map[string]bool{}
	for _, d := range s.Devices {
		for _, c := range d.Counters {
			if n := "junction_device_" + promName(c.Name) + "_total"; !seen[n] {
				seen[n] = true
				names = append(names, n)
			}
		}
	}
	for _, n := range names {
		pw.family(n, "counter", "Driver counter.")
		for _, d := range s.Devices {
			for _, c := range d.Counters {
				if "junction_device_"+promName(c.Name)+"_total" == n {
					pw.sample(n, c.Value, "device", d.Device, "driver", d.Driver)
				}
			}
		}
	}
	pw.family("junction_rx_packets_total", "counter", "Packets the sources took from their devices.")
	pw.sample("junction_rx_packets_total", s.Totals.RX)
	pw.family("junction_tx_packets_total", "counter", "Packets the devices transmitted.")
	pw.sample("junction_tx_packets_total", s.Totals.TX)
	pw.family("junction_drops_total", "counter", "Packets lost: dropped by elements or lost by the devices on transmit.")
	pw.sample("junction_drops_total", s.Totals.Drops)
	pw.family("junction_consumed_total", "counter", "Packets elements freed by design (Discard, ARP that needs no answer): not losses.")
	pw.sample("junction_consumed_total", s.Totals.Consumed)
	pw.family("junction_in_flight_packets", "gauge", "Packets handed between workers and not yet taken (rx + created = tx + drops + consumed + in flight + held).")
	pw.sample("junction_in_flight_packets", s.Totals.InFlight)
	pw.family("junction_uptime_seconds", "gauge", "Time since the workers started.")
	pw.sampleFloat("junction_uptime_seconds", s.Uptime.Seconds())
	pw.family("junction_graph_generation", "gauge", "Generation of the running graph: 1 at start, one more per reload.")
	pw.sampleFloat("junction_graph_generation", float64(s.Graph.Generation))
	pw.family("junction_graph_loaded_timestamp_seconds", "gauge", "When the running graph was loaded (Unix time).")
	pw.sampleFloat("junction_graph_loaded_timestamp_seconds", float64(s.Graph.LoadedAt.UnixNano())/1e9)
	return pw.err
}

type promWriter struct {
	w   io.Writer
	err error
}

func (p *promWriter) printf(format string, args ...any) {
	if p.err == nil {
		_, p.err = fmt.Fprintf(p.w, format, args...)
	}
}

func (p *promWriter) family(name, typ, help string) {
	p.printf("# HELP %s %s\n# TYPE %s %s\n", name, help, name, typ)
}

func (p *promWriter) sample(name string, v uint64, labels ...string) {
	p.printf("%s%s %d\n", name, promLabels(labels), v)
}

func (p *promWriter) sampleFloat(name string, v float64, labels ...string) {
	p.printf("%s%s %s\n", name, promLabels(labels), strconv.FormatFloat(v, 'g', -1, 64))
}

func promLabels(kv []string) string {
	if len(kv) == 0 {
		return ""
	}
	var sb strings.Builder
	sb.WriteByte('{')
	for i := 0; i+1 < len(kv); i += 2 {
		if i > 0 {
			sb.WriteByte(',')
		}
		sb.WriteString(kv[i])
		sb.WriteString(`="`)
		sb.WriteString(promEscape(kv[i+1]))
		sb.WriteByte('"')
	}
	sb.WriteByte('}')
	return sb.String()
}

var promEscaper = strings.NewReplacer(`\`, `\\`, `"`, `\"`, "\n", `\n`)

func promEscape(s string) string { return promEscaper.Replace(s) }

// promName turns a counter name ("tx drops", "rx-bytes") into a metric name
// part ("tx_drops", "rx_bytes").
func promName(s string) string {
	var sb strings.Builder
	for _, c := range strings.ToLower(s) {
		switch {
		case c >= 'a' && c <= 'z', c >= '0' && c <= '9':
			sb.WriteRune(c)
		default:
			if sb.Len() > 0 && !strings.HasSuffix(sb.String(), "_") {
				sb.WriteByte('_')
			}
		}
	}
	return strings.TrimSuffix(sb.String(), "_")
}

func itoa(i int) string { return strconv.Itoa(i) }
