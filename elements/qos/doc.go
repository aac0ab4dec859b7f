// Package qos provides the quality-of-service elements: Policer (RFC 2697
// single-rate and RFC 2698 two-rate three-colour markers, per element, per
// flow or per address prefix), Shaper (a rate-limited queue with a burst
// and strict-priority bands by DSCP, drained by the worker's loop) and
// SetDSCP (re-marks packets).
//
// Token arithmetic is exact integers: a bucket counts credits of one bit
// times one nanosecond, so a rate in bit/s adds rate credits per
// nanosecond and a byte costs 8e9 credits. Refilling needs no division and
// a test can check RFC 2697's and RFC 2698's colours to the byte.
//
// State is per worker (no locks, no shared cache lines): the share key
// says whether each worker's bucket gets the configured rate divided by
// the number of workers (the aggregate never exceeds it, the default) or
// the whole rate (right when everything one bucket meters reaches one
// worker: one worker, or per-flow keys, since a flow stays on its worker).
package qos
