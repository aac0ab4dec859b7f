package pipeline

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
)

// TestPrometheusConsumed: what elements consumed by design is exported in
// families of its own (per element and reason, and the total), never in
// the drops families nor among the events; the JSON snapshot carries it
// per element and in the totals.
func TestPrometheusConsumed(t *testing.T) {
	s := consumedSnapshot()
	var buf bytes.Buffer
	if err := s.WritePrometheus(&buf); err != nil {
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
	var back Snapshot
	if err := json.Unmarshal(js, &back); err != nil {
		t.Fatal(err)
	}
	if back.Totals.Consumed != 15 || back.Totals.Drops != 30 || back.Elements[len(back.Elements)-1].Consumed != 10 ||
		!back.Elements[len(back.Elements)-1].Counters[0].Consumed || !strings.Contains(string(js), `"consumed":15`) {
		t.Errorf("JSON: %s", js)
	}
}
