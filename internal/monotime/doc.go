// Package monotime reads the runtime's monotonic clock: the one place
// Junction links runtime.nanotime. elements.Nanotime (the accounting's
// clock) and the flow tables' clock are this function, inlined; drivers,
// which must not import the element contract, call it directly.
package monotime
