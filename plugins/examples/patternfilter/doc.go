// Package patternfilter is a worked example of both ways to extend
// Junction with one element: it registers the in-process element type
// "PatternFilter" in init() exactly as the built-ins do (a custom forwarder
// build adds one blank import of this package), and cmd/patternfilter serves
// the same matcher as an out-of-process plugin through plugins/sdk.
//
// PatternFilter sends a packet whose payload contains any of the configured
// byte patterns to output 1 and everything else to output 0.
package patternfilter
