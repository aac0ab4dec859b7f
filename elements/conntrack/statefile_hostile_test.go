package conntrack_test

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/junction-dataplane/junction/elements/conntrack"
	"github.com/junction-dataplane/junction/packet"
)

// A state file's names planted by someone else: a link at the file or at
// the name the old code wrote through (PREFIX.wN.tmp) is not followed,
// and a FIFO at the file is refused at once instead of blocking the
// worker's start.
func TestStateFileHostile(t *testing.T) {
	dir := t.TempDir()
	tb := conntrack.NewTable(16, conntrack.DefaultTimeouts(), nil)
	k := conntrack.Tuple{Src: 1, Dst: 2, Sport: 3, Dport: 4, Proto: packet.ProtoUDP}
	idx, _ := tb.Create(&k, tb.Now())
	tb.Conn(idx).Expires = tb.Now() + 1e9

	victim := filepath.Join(dir, "victim")
	const keep = "not a state file\n"
	os.WriteFile(victim, []byte(keep), 0o644)

	// A link at the old fixed temporary name.
	path := filepath.Join(dir, "ct.w0")
	os.Symlink(victim, path+".tmp")
	if err := tb.SaveState(path, 1); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(victim); string(b) != keep {
		t.Fatalf("written through the link at .tmp: %q", b)
	}
	if n, err := conntrack.NewTable(16, conntrack.DefaultTimeouts(), nil).LoadState(path, 1); n != 1 || err != nil {
		t.Errorf("restored %d: %v", n, err)
	}

	// A link at the file itself: refused, not replaced.
	link := filepath.Join(dir, "ln.w0")
	os.Symlink(victim, link)
	if err := tb.SaveState(link, 1); err == nil || !strings.Contains(err.Error(), "symbolic link") {
		t.Errorf("save over a link: %v", err)
	}
	if b, _ := os.ReadFile(victim); string(b) != keep {
		t.Fatalf("written through the link: %q", b)
	}
	if m, _ := filepath.Glob(filepath.Join(dir, ".*")); len(m) != 0 {
		t.Errorf("temporary files left: %v", m)
	}

	// A FIFO.
	fifo := filepath.Join(dir, "fifo.w0")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() {
		_, err := conntrack.NewTable(16, conntrack.DefaultTimeouts(), nil).LoadState(fifo, 1)
		done <- err
	}()
	select {
	case err := <-done:
		if err == nil || !strings.Contains(err.Error(), "not a regular file but a FIFO") {
			t.Errorf("load a FIFO: %v", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("LoadState(FIFO) still blocked after 5 s")
	}
	if err := tb.SaveState(fifo, 1); err == nil || !strings.Contains(err.Error(), "FIFO") {
		t.Errorf("save over a FIFO: %v", err)
	}
	// check says so, on the key, as run would find it.
	cfg := &conntrack.Config{Capacity: 16, StateFile: filepath.Join(dir, "fifo")}
	if err := cfg.CheckEnv(nil); err == nil || !strings.Contains(err.Error(), `key "state_file"`) || !strings.Contains(err.Error(), "FIFO") {
		t.Errorf("CheckEnv with a FIFO state file: %v", err)
	}
	cfg.StateFile = filepath.Join(dir, "ct")
	if err := cfg.CheckEnv(nil); err != nil {
		t.Errorf("CheckEnv with no state file: %v", err)
	}
}
