package suggest

import "github.com/junction-dataplane/junction/conf"

// Nearest is conf.Nearest: the candidate nearest to name, or "" when none
// is near enough to be a plausible typo.
func Nearest(name string, candidates []string) string { return conf.Nearest(name, candidates) }

// Distance is conf.Distance: the edit distance of a and b, stopping at
// bound.
func Distance(a, b string, bound int) int { return conf.Distance(a, b, bound) }
