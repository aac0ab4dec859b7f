package qos

import "github.com/junction-dataplane/junction/elements"

// Rates implements elements.RateLimiter: the committed rate, and the peak
// rate of a two-rate marker. With share = "split" each worker meters
// rate/workers, but the rate is what all of them pass together.
func (c *PolicerConfig) Rates() []elements.RateKey {
	r := []elements.RateKey{{Key: "rate", BitsPerSecond: uint64(c.Rate)}}
	if c.PeakRate != 0 {
		r = append(r, elements.RateKey{Key: "peak_rate", BitsPerSecond: uint64(c.PeakRate)})
	}
	return r
}

// Rates implements elements.RateLimiter: a Shaper whose rate exceeds
// what can reach it never queues anything.
func (c *ShaperConfig) Rates() []elements.RateKey {
	return []elements.RateKey{{Key: "rate", BitsPerSecond: uint64(c.Rate)}}
}
