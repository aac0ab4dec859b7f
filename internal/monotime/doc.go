// Package monotime reads the runtime's monotonic clock, for packages that
// must not import the element contract to get it (drivers). It is the
// same clock as elements.Nanotime.
package monotime
