// Package devices provides FromDevice and ToDevice, the elements that connect a graph to its devices.
package devices
