// Package conf is the vocabulary of configuration shared by elements,
// drivers, plugins and the graph-file loader: KeyError and Errorf (an error
// attached to a key, reported at the key's line), Validator, the manual
// page (Doc, Key), the nearest-name suggestion of "did you mean" (Nearest)
// and the one decoder of config structs (Fields, SetValue, SetText,
// DecodeTable), used by the loader and by the plugin SDK alike.
//
// conf imports nothing of Junction, so that a driver or a plugin can speak
// it without linking the element registry.
package conf
