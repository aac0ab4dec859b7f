package ip

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/junction-dataplane/junction/elements/ip/route"
)

// TestRoutesFileOnlyRegular: a routes_file that is not a regular file —
// /dev/zero, which a reader that trusts the file would read without end, a FIFO
// no one writes to, a directory — or that is larger than MaxRoutesFileSize
// is refused at once with an error naming the key and the reason, and an
// overlong line is refused with its quote cut.
func TestRoutesFileOnlyRegular(t *testing.T) {
	dir := t.TempDir()
	fifo := filepath.Join(dir, "fifo")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	big := filepath.Join(dir, "big")
	f, err := os.Create(big)
	if err != nil {
		t.Fatal(err)
	}
	// Sparse: no disk space is used.
	if err := f.Truncate(route.MaxRoutesFileSize + 1); err != nil {
		t.Fatal(err)
	}
	f.Close()
	long := filepath.Join(dir, "long")
	if err := os.WriteFile(long, []byte("10.0.0.0/8 out 0\n"+strings.Repeat("1", 1<<20)+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ file, want string }{
		{"/dev/zero", "/dev/zero: not a regular file but a character device"},
		{fifo, "fifo: not a regular file but a FIFO"},
		{dir, "not a regular file but a directory"},
		{big, "is 268435457 bytes: at most 268435456 (MaxRoutesFileSize)"},
		{long, `long:2: "` + strings.Repeat("1", 80) + `"...: line of 1048576 bytes, at most 1024`},
	} {
		start := time.Now()
		c := &IPLookupConfig{RoutesFile: tc.file, Miss: -1}
		err := c.Validate()
		if took := time.Since(start); took > 5*time.Second {
			t.Errorf("%s: took %v", tc.file, took)
		}
		if err == nil || !strings.Contains(err.Error(), tc.want) || !strings.HasPrefix(err.Error(), `key "routes_file"`) {
			t.Errorf("%s: %v, want key \"routes_file\" and %q", tc.file, err, tc.want)
		}
		if err != nil && len(err.Error()) > 300 {
			t.Errorf("%s: error of %d bytes", tc.file, len(err.Error()))
		}
	}
}
