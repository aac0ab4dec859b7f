package statshttp

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/junction-dataplane/junction/pipeline"
)

// TestPrometheusConsumed: what elements consumed by design is exported in
// families of its own (per element and reason, and the total), never in
// the drops families nor among the events; the JSON snapshot carries it
// per element and in the totals.
func TestPrometheusConsumed(t *testing.T) {
	s := consumedSnapshot()
	var buf bytes.Buffer
	if err := WritePrometheus(&buf, s); err != nil {
		t.Fatal(err)
	}
	out := buf.String()
	for _, want := range []string{
		`junction_element_consumed_total{element="Discard@4",type="Discard",worker="1",reason="not ip"} 10`,
		"\njunction_consumed_total 15\n",
		"\njunction_drops_total 30\n",
		`junction_element_drops_total{element="rt",type="IPLookup",worker="0",reason="no route"} 10`,
	} {
		if !strings.Contains(out, want) {
			t.Errorf("no %s in\n%s", want, out)
		}
	}
	for _, l := range strings.Split(out, "\n") {
		if strings.Contains(l, `"not ip"`) && !strings.HasPrefix(l, "junction_element_consumed_total{") {
			t.Errorf("a consumption outside its family: %s", l)
		}
	}
	js, err := json.Marshal(s)
	if err != nil {
		t.Fatal(err)
	}
	var back pipeline.Snapshot
	if err := json.Unmarshal(js, &back); err != nil {
		t.Fatal(err)
	}
	if back.Totals.Consumed != 15 || back.Totals.Drops != 30 || back.Elements[len(back.Elements)-1].Consumed != 10 ||
		!back.Elements[len(back.Elements)-1].Counters[0].Consumed || !strings.Contains(string(js), `"consumed":15`) {
		t.Errorf("JSON: %s", js)
	}
}

// consumedSnapshot is a two-worker snapshot of a small router, in graph
// order, with a Discard(not ip) that consumed 5 packets on worker 0 and 10
// on worker 1, and an IPLookup that dropped 10 and 20.
func consumedSnapshot() *pipeline.Snapshot {
	el := func(name, typ string, w int, batches, pkts, drops, consumed uint64, cs ...pipeline.Counter) pipeline.ElementStats {
		return pipeline.ElementStats{Element: name, Type: typ, Worker: w, Batches: batches, Packets: pkts, Drops: drops,
			Consumed: consumed, TimedNanos: 10 * pkts, TimedPackets: pkts, NsPerPacket: 10, Nanos: 10 * pkts, Counters: cs}
	}
	s := &pipeline.Snapshot{Uptime: 5 * time.Second}
	for w := 0; w < 2; w++ {
		k := uint64(w + 1)
		s.Elements = append(s.Elements,
			el("FromDevice(lan)@1", "FromDevice", w, 100*k, 6415*k, 0, 0),
			el("rt", "IPLookup", w, 100*k, 6400*k, 10*k, 0, pipeline.Counter{Name: "no route", Drop: true, Value: 10 * k}),
			el("ToDevice(wan)@3", "ToDevice", w, 100*k, 6390*k, 0, 0),
			el("Discard@4", "Discard", w, 5*k, 5*k, 0, 5*k, pipeline.Counter{Name: "not ip", Consumed: true, Value: 5 * k}))
	}
	s.Devices = []pipeline.DeviceStats{{Device: "lan", Driver: "gen", Counters: []pipeline.DeviceCounter{{Name: "rx_packets", Value: 19245}}},
		{Device: "wan", Driver: "gen", Counters: []pipeline.DeviceCounter{{Name: "tx_packets", Value: 19170}}}}
	s.Totals = pipeline.Totals{RX: 19245, TX: 19170, Drops: 30, Consumed: 15}
	return s
}

func TestPromName(t *testing.T) {
	for in, want := range map[string]string{"tx drops": "tx_drops", "rx": "rx", "TX-Ring Full!": "tx_ring_full"} {
		if got := promName(in); got != want {
			t.Errorf("promName(%q) = %q, want %q", in, got, want)
		}
	}
}
