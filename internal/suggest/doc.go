// Package suggest finds the nearest valid name to a mistyped one, for the
// "did you mean" of every error that names something: graph keys and
// element types, CLI subcommands, plugin config keys, Classifier words.
package suggest
