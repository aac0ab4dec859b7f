// Package cputime reads the calling thread's CPU time: what the kernel gave
// it, which on a CPU shared with other threads (or, here, other guests'
// work the guest cannot see) is less than the wall time it was busy. The
// pipeline's workers report it, and the benchmarks divide packets by it.
package cputime
