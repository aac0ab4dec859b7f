//go:build !linux

package pipeline

import "errors"

// Pinning is implemented on Linux only.
var processCPUs []int

func pinThread(cpu int) error { return errors.New("pinning is not supported on this OS") }

func confineThreads(cpus, workerTIDs []int) (int, error) { return 0, nil }

func threadID() int { return 0 }
