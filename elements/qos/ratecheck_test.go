package qos

import (
	"reflect"
	"testing"

	"github.com/junction-dataplane/junction/elements"
)

// TestRates: the Policer and the Shaper give forwarder check and run
// their rates by key (the link-speed warning compares them with the
// links that feed the element); the peak rate only for a two-rate
// Policer.
func TestRates(t *testing.T) {
	var _ elements.RateLimiter = (*PolicerConfig)(nil)
	var _ elements.RateLimiter = (*ShaperConfig)(nil)
	p := defaults(20_000_000)
	if got, want := p.Rates(), []elements.RateKey{{Key: "rate", BitsPerSecond: 20_000_000}}; !reflect.DeepEqual(got, want) {
		t.Errorf("srTCM: %v, want %v", got, want)
	}
	p.PeakRate = 50_000_000
	if got, want := p.Rates(), []elements.RateKey{{Key: "rate", BitsPerSecond: 20_000_000}, {Key: "peak_rate", BitsPerSecond: 50_000_000}}; !reflect.DeepEqual(got, want) {
		t.Errorf("trTCM: %v, want %v", got, want)
	}
	if got, want := shaperConfig(1_000_000_000).Rates(), []elements.RateKey{{Key: "rate", BitsPerSecond: 1_000_000_000}}; !reflect.DeepEqual(got, want) {
		t.Errorf("Shaper: %v, want %v", got, want)
	}
}
