package fastpath

import (
	"errors"
	"fmt"
	"sync"

	"github.com/cilium/ebpf"
)

// The programs are C (bpf/fastpath.c), compiled by bpf2go into
// fastpath_bpfel.o, which fastpath_bpfel.go embeds; see doc.go. Each
// -type is a map key or value of bpf/fastpath.h whose Go type bpf2go
// generates from the object's BTF (fastpathRoute, ...; -no-global-types
// leaves out the rest, the IPv4 flow key and value among them: see
// flows.go).
// -mcpu=v3: 32-bit jumps and ALU (Linux 5.1; DEVMAP_HASH needs 5.4
// anyway). -mllvm -enable-tail-merge=false: one call site per map
// helper and map, see TestOneMapPerCallSite. The second line records the
// compiler, which TestObjectsUpToDate needs: another clang version makes
// other bytes.
//
//go:generate go run github.com/cilium/ebpf/cmd/bpf2go -cc clang -cflags "-O2 -mcpu=v3 -Wall -Werror -mllvm -enable-tail-merge=false" -target bpfel -no-global-types -type counters -type egress -type flow_gen -type flow_stats -type flow6 -type flow6_key -type local_key -type neigh -type neigh_key -type neigh6 -type neigh6_key -type police -type dir4_entries -type route -type route6 -type route6_key -go-package fastpath fastpath bpf/fastpath.c
//go:generate sh -c "clang --version | sed -n 1p > bpf/clang-version"

// objectSpec is one program of the compiled object, ready for load: its
// constants set, and every map it may use replaced by one of ours
// (Tables' or Program's), so that loading creates no map but the
// program's constants (.rodata). err is the first error making it; load
// returns it.
type objectSpec struct {
	coll *ebpf.CollectionSpec
	maps map[string]*ebpf.Map
	err  error
}

// loadedProgram is the key under which objectSpec holds its program.
const loadedProgram = "prog"

// parsedObject parses the embedded object once; every load copies it.
var parsedObject = sync.OnceValues(loadFastpath)

// newObjectSpec prepares program name of the object, to be loaded as
// kernelName, with constants consts (.rodata variables by name) and
// maps replacing the object's declarations of the same names. The
// declarations' max_entries are placeholders: each takes its
// replacement's; type, key and value sizes and flags must match the
// replacement's (load fails otherwise).
func newObjectSpec(name, kernelName string, consts map[string]any, maps map[string]*ebpf.Map) objectSpec {
	base, err := parsedObject()
	if err != nil {
		return objectSpec{err: fmt.Errorf("fastpath: the embedded object: %w", err)}
	}
	coll := base.Copy()
	ps, ok := coll.Programs[name]
	if !ok {
		return objectSpec{err: fmt.Errorf("fastpath: no program %q in the embedded object", name)}
	}
	ps.Name = kernelName
	coll.Programs = map[string]*ebpf.ProgramSpec{loadedProgram: ps}
	for n, v := range consts {
		vs, ok := coll.Variables[n]
		if !ok {
			return objectSpec{err: fmt.Errorf("fastpath: no constant %q in the embedded object", n)}
		}
		if err := vs.Set(v); err != nil {
			return objectSpec{err: fmt.Errorf("fastpath: setting %s: %w", n, err)}
		}
	}
	for n, m := range maps {
		ms, ok := coll.Maps[n]
		if !ok {
			return objectSpec{err: fmt.Errorf("fastpath: no map %q in the embedded object", n)}
		}
		if m == nil {
			return objectSpec{err: errors.New("fastpath: tables closed")}
		}
		ms.MaxEntries = m.MaxEntries()
	}
	return objectSpec{coll: coll, maps: maps}
}

// load loads s's program. Only the maps it uses are taken (each a new
// reference to ours, which the program keeps); the constants map is
// created, frozen, and referenced only by the program.
func load(s objectSpec) (*ebpf.Program, error) {
	if s.err != nil {
		return nil, s.err
	}
	var objs struct {
		Prog *ebpf.Program `ebpf:"prog"`
	}
	opts := &ebpf.CollectionOptions{MapReplacements: s.maps}
	err := s.coll.LoadAndAssign(&objs, opts)
	if err != nil && isEPERM(err) {
		raiseMemlock()
		err = s.coll.LoadAndAssign(&objs, opts)
	}
	return objs.Prog, err
}
