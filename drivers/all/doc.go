// Package all registers every standard driver; import it for its side
// effects.
package all
