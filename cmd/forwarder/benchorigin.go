package main

import (
	"fmt"
	"io"
	"runtime/debug"

	"github.com/junction-dataplane/junction/benchmarks/result"
)

// benchOrigin is what produced a bench result: the machine, the build it
// ran and the load when it started, so that a figure copied out of the
// text or the JSON carries them.
type benchOrigin struct {
	machine result.Machine
	// commitFrom says where machine.Commit came from: the binary's build
	// information, or git in the working directory when the binary has
	// none (go run and go test, or -buildvcs=false, stamp none); "" when
	// neither knows it.
	commitFrom string
}

// benchOriginNow describes this machine and build, with the load average
// of now: called before the run, so that the load is the one the run met
// and not the one it caused.
func benchOriginNow() benchOrigin {
	bi, ok := debug.ReadBuildInfo()
	return originFrom(result.ThisMachine(), bi, ok)
}

// originFrom takes the commit from the build information, as forwarder
// version does; m's commit (result.ThisMachine asks git where the binary
// has none) is kept only where the build information has no revision,
// and said to come from the working directory.
func originFrom(m result.Machine, bi *debug.BuildInfo, ok bool) benchOrigin {
	if ok {
		var rev, modified string
		for _, s := range bi.Settings {
			switch s.Key {
			case "vcs.revision":
				rev = s.Value
			case "vcs.modified":
				modified = s.Value
			}
		}
		if rev != "" {
			m.Commit, m.Modified = rev, modified == "true"
			return benchOrigin{machine: m, commitFrom: "build information"}
		}
	}
	if m.Commit == "" {
		return benchOrigin{machine: m}
	}
	return benchOrigin{machine: m, commitFrom: "git in the working directory: the binary has no VCS information"}
}

// write prints the three lines that head bench's text.
func (o benchOrigin) write(w io.Writer) {
	m := o.machine
	cpu := m.CPU
	if cpu == "" {
		cpu = "unknown CPU"
	}
	fmt.Fprintf(w, "machine  %s, %s, %s, %s\n", cpu, count(m.Cores, "core"), m.Kernel, m.Go)
	switch {
	case m.Commit == "":
		fmt.Fprintln(w, "commit   unknown (no VCS information in the binary, no git work tree here: go build -buildvcs=true)")
	case m.Modified:
		fmt.Fprintf(w, "commit   %s, modified (from %s)\n", m.Commit, o.commitFrom)
	default:
		fmt.Fprintf(w, "commit   %s (from %s)\n", m.Commit, o.commitFrom)
	}
	fmt.Fprintf(w, "load     %.2f (one-minute load average at the start)\n", m.Load1)
}
