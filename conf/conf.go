package conf

import (
	"fmt"
	"maps"
	"slices"
	"strconv"
	"unicode/utf8"
)

// KeyError is a config error attached to one key, so that the loader can
// report it with the key's line.
type KeyError struct {
	Key string
	Err error
}

func (e *KeyError) Error() string { return fmt.Sprintf("key %q: %v", e.Key, e.Err) }
func (e *KeyError) Unwrap() error { return e.Err }

// Errorf makes a KeyError.
func Errorf(key, format string, args ...any) error {
	return &KeyError{Key: key, Err: fmt.Errorf(format, args...)}
}

// Validator is implemented by configs that check themselves after decoding
// (ranges, parsing of rule strings). The error should name the key:
// use KeyError.
type Validator interface {
	Validate() error
}

// Doc is a manual page, in Click's sections: an element's, a driver's or
// a plugin's. A driver's page has no Ports and no Synopsis of its own (its
// synopsis is the [devices.NAME] table); an element's has no Queues.
type Doc struct {
	Synopsis string // e.g. "DecTTL" or "Classifier(RULE, ...)"
	Summary  string // one line
	Ports    string // an element's: what each input and output does
	Queues   string // a driver's: its RX and TX queues and which worker serves each
	Keys     []Key  // in positional order
	Stats    string // counters and drop reasons
	Example  string // a graph snippet
	SeeAlso  string
	Text     string // longer description, optional
}

// Key documents one config key.
type Key struct {
	Name     string
	Type     string // "string", "int", "bool", "[]string", "address", ...
	Default  string // "" when required or none
	Required bool
	// Variadic marks the last positional key of list type: every remaining
	// inline argument goes into it.
	Variadic bool
	Doc      string
}

// MaxQuoted bounds a value quoted in an error message (Quote).
const MaxQuoted = 80

// Quote quotes s for an error message, cut to MaxQuoted bytes (on a
// character boundary) with its full length said.
func Quote(s string) string {
	if len(s) <= MaxQuoted {
		return strconv.Quote(s)
	}
	cut := MaxQuoted
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return fmt.Sprintf("%s... (%d bytes)", strconv.Quote(s[:cut]), len(s))
}

func sortedKeys(m map[string]any) []string { return slices.Sorted(maps.Keys(m)) }
