// Package benchmarks holds Junction's whole-graph benchmarks and the
// recorded results (README.md). Element benchmarks live next to their
// elements; these run complete graphs from configs/ on the gen driver.
package benchmarks
