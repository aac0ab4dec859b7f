package host_test

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// bin is where TestMain builds the test plugins (once per test binary;
// go build's cache makes rebuilds cheap).
var bin string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "junction-plugins-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	bin = dir
	code := func() int {
		for _, p := range []string{"faulty", "wrongversion"} {
			cmd := exec.Command("go", "build", "-o", filepath.Join(dir, p), "./testdata/"+p)
			cmd.Stderr = os.Stderr
			if err := cmd.Run(); err != nil {
				fmt.Fprintln(os.Stderr, "building test plugin", p, err)
				return 1
			}
		}
		return m.Run()
	}()
	os.RemoveAll(dir)
	os.Exit(code)
}

func pluginPath(name string) string { return filepath.Join(bin, name) }
