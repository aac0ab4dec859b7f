package afpacket

import (
	"os"
	"strings"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/junction-dataplane/junction/drivers/afxdp/fastpath"
	"github.com/junction-dataplane/junction/drivers/internal/drvtest"
	"github.com/junction-dataplane/junction/drivers/kfeature"
)

// TestCPUMask: rps_cpus' format, 32-bit hexadecimal words, the most
// significant first.
func TestCPUMask(t *testing.T) {
	for _, c := range []struct {
		cpus []int
		want string
	}{
		{[]int{0}, "00000001"},
		{[]int{0, 1}, "00000003"},
		{[]int{1, 3, 31}, "8000000a"},
		{[]int{0, 32}, "00000001,00000001"},
		{[]int{40, 70}, "00000040,00000100,00000000"},
	} {
		var s unix.CPUSet
		for _, n := range c.cpus {
			s.Set(n)
		}
		if got := cpuMask(&s); got != c.want {
			t.Errorf("CPUs %v: %q, want %q", c.cpus, got, c.want)
		}
	}
}

// TestRPSOtherNamespace: opened in a network namespace whose sysfs is
// not mounted where it runs (the test enters the namespace without
// remounting /sys), the device with the fast path in TC touches no
// rps_cpus: /sys/class/net has no such interface, or another
// namespace's of that name. It opens all the same.
func TestRPSOtherNamespace(t *testing.T) {
	kfeature.Require(t, fastpath.TCFeatures...)
	pr := drvtest.NewPair(t, 1)
	d, err := openIn(t, pr.DevNS, tcCfg(pr.DevIf, "tc"), 1)
	if err != nil {
		t.Fatal(err)
	}
	if len(d.rps) != 0 {
		t.Errorf("RPS set through another namespace's sysfs: %+v", d.rps)
	}
	if _, err := os.Stat("/sys/class/net/" + pr.DevIf); err == nil {
		t.Skip("this sysfs shows the test's interface: run as the e2e tests do")
	}
	if _, err := setRPS(pr.DevIf, 1, "00:00:00:00:00:00"); err == nil || !strings.Contains(err.Error(), pr.DevIf) {
		t.Errorf("setRPS on an interface this sysfs does not show: %v", err)
	}
}

// TestRestoreRPSGone: a queue whose interface went away (its veth
// deleted with its namespace) is not an error at Close.
func TestRestoreRPSGone(t *testing.T) {
	dir := t.TempDir()
	ok := dir + "/rps_cpus"
	if err := os.WriteFile(ok, []byte("3"), 0o644); err != nil {
		t.Fatal(err)
	}
	err := restoreRPS([]rpsQueue{{path: dir + "/gone/rps_cpus", old: []byte("0")}, {path: ok, old: []byte("0")}})
	if b, _ := os.ReadFile(ok); err != nil || string(b) != "0" {
		t.Errorf("restore with one queue gone: %v, the other holds %q", err, b)
	}
}
