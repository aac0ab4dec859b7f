package result

import (
	"bufio"
	"os"
	"os/exec"
	"runtime"
	"runtime/debug"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// Machine names where a result was taken.
type Machine struct {
	CPU    string `json:"cpu"`    // model name from /proc/cpuinfo
	Cores  int    `json:"cores"`  // CPUs this process may use
	Kernel string `json:"kernel"` // uname: sysname release
	Go     string `json:"go"`     // runtime.Version
	// Commit is the VCS revision the binary was built from (build info,
	// else `git rev-parse HEAD` in the working directory); Modified when
	// the tree had uncommitted changes.
	Commit   string `json:"commit,omitempty"`
	Modified bool   `json:"modified,omitempty"`
	// Load1 is the one-minute load average when the result was taken: a
	// shared machine's figures are noisier the higher it is.
	Load1 float64 `json:"load1"`
}

// ThisMachine describes the machine and build this process runs on.
func ThisMachine() Machine {
	m := Machine{CPU: cpuModel(), Cores: runtime.NumCPU(), Go: runtime.Version(), Load1: load1()}
	var u unix.Utsname
	if unix.Uname(&u) == nil {
		m.Kernel = unix.ByteSliceToString(u.Sysname[:]) + " " + unix.ByteSliceToString(u.Release[:])
	}
	if bi, ok := debug.ReadBuildInfo(); ok {
		for _, s := range bi.Settings {
			switch s.Key {
			case "vcs.revision":
				m.Commit = s.Value
			case "vcs.modified":
				m.Modified = s.Value == "true"
			}
		}
	}
	if m.Commit == "" {
		// go run and go test do not stamp the revision.
		if out, err := exec.Command("git", "rev-parse", "HEAD").Output(); err == nil {
			m.Commit = strings.TrimSpace(string(out))
			if st, err := exec.Command("git", "status", "--porcelain", "--untracked-files=no").Output(); err == nil {
				m.Modified = len(strings.TrimSpace(string(st))) > 0
			}
		}
	}
	return m
}

// String is the machine in one line, for captions.
func (m Machine) String() string {
	s := m.CPU
	if s == "" {
		s = "unknown CPU"
	}
	s += ", " + strconv.Itoa(m.Cores) + " cores, " + m.Kernel + ", " + m.Go
	if m.Commit != "" {
		c := m.Commit
		if len(c) > 7 {
			c = c[:7]
		}
		if m.Modified {
			c += "+"
		}
		s += ", " + c
	}
	return s
}

func cpuModel() string {
	f, err := os.Open("/proc/cpuinfo")
	if err != nil {
		return runtime.GOARCH
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		k, v, ok := strings.Cut(sc.Text(), ":")
		if ok && strings.TrimSpace(k) == "model name" {
			return strings.TrimSpace(v)
		}
	}
	return runtime.GOARCH
}

func load1() float64 {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return 0
	}
	f := strings.Fields(string(b))
	if len(f) == 0 {
		return 0
	}
	v, _ := strconv.ParseFloat(f[0], 64)
	return v
}
