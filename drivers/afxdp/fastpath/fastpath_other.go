//go:build !(386 || amd64 || arm || arm64 || loong64 || mips64le || mipsle || ppc64le || riscv64 || wasm)

package fastpath

import (
	"errors"

	"github.com/cilium/ebpf"
)

// loadFastpath: the object is compiled for little-endian hosts only
// (bpf2go -target bpfel); on the others, every NewProgram and
// WatchRedirects fails with this error and the driver runs without a
// fast path.
func loadFastpath() (*ebpf.CollectionSpec, error) {
	return nil, errors.New("no fast-path object for big-endian hosts (built with -target bpfel only)")
}
