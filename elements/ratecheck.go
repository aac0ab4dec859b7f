package elements

// RateKey is a rate a config sets, by its key, in bit/s.
type RateKey struct {
	Key           string
	BitsPerSecond uint64
}

// RateLimiter is implemented by configs that limit the rate of the
// packets they are given (Policer). forwarder check and run warn about a
// rate beyond what the links those packets can come from carry in all,
// where the kernel reports their speeds: such a limit never acts.
type RateLimiter interface {
	Rates() []RateKey
}
