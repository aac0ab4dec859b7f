// Package gen provides the gen driver: synthetic traffic built once into reusable frames, and a sink that counts and frees.
package gen
