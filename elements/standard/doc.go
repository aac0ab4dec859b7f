// Package standard provides the basic Click elements: Counter, Discard, Tee and Print.
package standard
