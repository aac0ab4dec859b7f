// Package examples holds worked examples of Junction extensions: each
// subdirectory is one element, with a README, a graph in configs/plugins/
// and end-to-end tests.
package examples
