// Command patternfilter serves the PatternFilter element as a Junction
// plugin: the same matcher as the in-process element, out of process.
//
//	go build -o bin/patternfilter ./plugins/examples/patternfilter/cmd/patternfilter
package main
