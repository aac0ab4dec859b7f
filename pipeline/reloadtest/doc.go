// Package reloadtest holds the tests of hot reload (pipeline.Router.Reload)
// that run real elements and drivers: whole graphs swapped under load on
// gen devices, and NAT state carried over. It has no code of its own; the
// tests live apart from package pipeline's so that the real element
// registry does not meet the fakes those tests register.
package reloadtest
