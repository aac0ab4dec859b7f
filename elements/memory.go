package elements

import (
	"bufio"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"
	"syscall"
)

// MemoryUser is implemented by configs whose element allocates, in every
// worker, memory that a key sizes (Conntrack's capacity). The pipeline's
// validation pass, which forwarder check and run share, adds it up over
// the graph's elements and workers and refuses a graph beyond
// MemoryBudget, naming the element and key that ask for the most: a table
// that does not fit ends the process (the Go runtime's "out of memory" is
// not an error it can return) or has the kernel kill it, after it took the
// machine's memory.
type MemoryUser interface {
	// MemoryPerWorker is the most New allocates in one worker, and the
	// key that sizes it.
	MemoryPerWorker() (bytes uint64, key string)
}

// MemoryBudget is what the elements' tables may take in all: half of the
// machine's memory (MemTotal in /proc/meminfo), or of the cgroup's limit
// or the process's address-space limit if lower, leaving the other half to packets, route tables, the kernel
// and the rest of the machine. what names the source ("MemTotal 24 GiB").
// Zero when neither can be read (then nothing is refused).
func MemoryBudget() (bytes uint64, what string) {
	budgetOnce.Do(func() { budgetBytes, budgetWhat = readBudget() })
	return budgetBytes, budgetWhat
}

var (
	budgetOnce  sync.Once
	budgetBytes uint64
	budgetWhat  string
)

func readBudget() (uint64, string) {
	total, what := uint64(0), ""
	if f, err := os.Open("/proc/meminfo"); err == nil {
		sc := bufio.NewScanner(f)
		for sc.Scan() {
			if v, ok := strings.CutPrefix(sc.Text(), "MemTotal:"); ok {
				kb, err := strconv.ParseUint(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), 10, 64)
				if err == nil {
					total, what = kb<<10, "MemTotal "+FormatBytes(kb<<10)
				}
			}
		}
		f.Close()
	}
	if lim := cgroupLimit(); lim > 0 && (total == 0 || lim < total) {
		total, what = lim, "the cgroup's memory limit "+FormatBytes(lim)
	}
	// An address-space limit (ulimit -v) fails the table's mapping, and
	// the Go heap then ends the process.
	var rl syscall.Rlimit
	if syscall.Getrlimit(syscall.RLIMIT_AS, &rl) == nil && rl.Cur < 1<<62 && (total == 0 || rl.Cur < total) {
		total, what = rl.Cur, "the address-space limit (ulimit -v) "+FormatBytes(rl.Cur)
	}
	return total / 2, what
}

// cgroupLimit reads the memory limit of this process's cgroup (v2
// memory.max, else v1 memory.limit_in_bytes); 0 for none.
func cgroupLimit() uint64 {
	b, err := os.ReadFile("/proc/self/cgroup")
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(b), "\n") {
		parts := strings.SplitN(line, ":", 3)
		if len(parts) != 3 {
			continue
		}
		var file string
		switch {
		case parts[0] == "0" && parts[1] == "":
			file = "/sys/fs/cgroup" + parts[2] + "/memory.max"
		case parts[1] == "memory":
			file = "/sys/fs/cgroup/memory" + parts[2] + "/memory.limit_in_bytes"
			if _, err := os.Stat(file); err != nil {
				// The namespace's own view: its cgroup is the root.
				file = "/sys/fs/cgroup/memory/memory.limit_in_bytes"
			}
		default:
			continue
		}
		if v, err := os.ReadFile(file); err == nil {
			n, err := strconv.ParseUint(strings.TrimSpace(string(v)), 10, 64)
			// "max", or v1's "no limit" (a page short of 2^63).
			if err == nil && n < 1<<62 {
				return n
			}
		}
	}
	return 0
}

// FormatBytes prints a size in binary units (KiB, MiB, GiB, TiB).
func FormatBytes(n uint64) string {
	const unit = 1024
	if n < unit {
		return fmt.Sprintf("%d B", n)
	}
	div, exp := uint64(unit), 0
	for m := n / unit; m >= unit && exp < 3; m /= unit {
		div *= unit
		exp++
	}
	return fmt.Sprintf("%.1f %ciB", float64(n)/float64(div), "KMGT"[exp])
}
