// Package suggest finds the nearest valid name to a mistyped one, for the
// "did you mean" of every error that names something: graph keys and
// element types, CLI subcommands, plugin config keys, Classifier words.
// The function itself lives in the leaf package conf (conf.Nearest).
package suggest
