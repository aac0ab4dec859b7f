package livedot

import (
	"errors"
	"testing"

	"github.com/junction-dataplane/junction/drivers"
	"github.com/junction-dataplane/junction/elements"
	"github.com/junction-dataplane/junction/pipeline/graphfile"
)

// The loader's test types that TestDOTLinks and TestDOTConsumed draw (their
// originals, with more keys, are pipeline/graphfile's test fakes): a
// source and a sink on a device, a filter with two outputs, a join with
// two inputs, and the "testld" driver. They only load; none runs.

type ldDeviceConfig struct {
	Device string `toml:"device"`
}

func ldNew(any, *elements.Context) (elements.Element, error) {
	return nil, errors.New("fake element type: not for running")
}

func init() {
	devKey := elements.Key{Name: "device", Type: "device", Required: true, Doc: "the device"}
	elements.Register(elements.Type{
		Name: "TestLdSource", In: 0, Out: 1, Source: true, New: ldNew,
		NewConfig: func() any { return &ldDeviceConfig{} },
		Doc:       elements.Doc{Synopsis: "TestLdSource(device)", Keys: []elements.Key{devKey}},
	})
	elements.Register(elements.Type{
		Name: "TestLdSink", In: 1, Out: 0, New: ldNew,
		NewConfig: func() any { return &ldDeviceConfig{} },
		Doc:       elements.Doc{Synopsis: "TestLdSink(device)", Keys: []elements.Key{devKey}},
	})
	elements.Register(elements.Type{
		Name: "TestLdFilter", In: 1, Out: 2, Optional: []int{1}, New: ldNew,
		Doc: elements.Doc{Synopsis: "TestLdFilter"},
	})
	elements.Register(elements.Type{
		Name: "TestLdJoin", In: 2, Out: 1, New: ldNew,
		Doc: elements.Doc{Synopsis: "TestLdJoin"},
	})
	drivers.Register(drivers.Driver{
		Name:      "testld",
		NewConfig: func() any { return &struct{}{} },
		Open: func(any, drivers.OpenContext) (drivers.Device, error) {
			return nil, errors.New("fake driver: not for running")
		},
	})
}

// mustParse loads src as "t.toml".
func mustParse(t *testing.T, src string) *graphfile.Graph {
	t.Helper()
	g, err := graphfile.Parse("t.toml", []byte(src))
	if err != nil {
		t.Fatalf("unexpected errors:\n%v", err)
	}
	return g
}
