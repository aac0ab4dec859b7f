package safefile

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

func TestOpenRegular(t *testing.T) {
	dir := t.TempDir()
	reg := filepath.Join(dir, "f")
	os.WriteFile(reg, []byte("x"), 0o644)
	link := filepath.Join(dir, "l")
	os.Symlink(reg, link)
	fifo := filepath.Join(dir, "p")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{reg, link} {
		f, err := OpenRegular(p)
		if err != nil {
			t.Fatalf("%s: %v", p, err)
		}
		b := make([]byte, 2)
		if n, _ := f.Read(b); n != 1 {
			t.Errorf("%s: read %d bytes", p, n)
		}
		f.Close()
	}
	for p, want := range map[string]string{fifo: "a FIFO", "/dev/null": "a character device", dir: "a directory"} {
		done := make(chan error, 1)
		go func() { _, err := OpenRegular(p); done <- err }()
		select {
		case err := <-done:
			var nr *NotRegularError
			if !errors.As(err, &nr) || !strings.Contains(err.Error(), "not a regular file but "+want) {
				t.Errorf("%s: %v", p, err)
			}
		case <-time.After(5 * time.Second):
			t.Fatalf("%s: blocked", p)
		}
	}
}

func TestCreateAndReplace(t *testing.T) {
	dir := t.TempDir()
	victim := filepath.Join(dir, "victim")
	os.WriteFile(victim, []byte("keep"), 0o644)
	link := filepath.Join(dir, "link")
	os.Symlink(victim, link)
	dangling := filepath.Join(dir, "dangling")
	os.Symlink(filepath.Join(dir, "through"), dangling)
	for _, p := range []string{victim, link, dangling} {
		if _, err := CreateExcl(p, 0o644); !errors.Is(err, fs.ErrExist) {
			t.Errorf("CreateExcl(%s): %v", p, err)
		}
	}
	for _, p := range []string{link, dangling} {
		if _, err := Replace(p, 0o644); err == nil || !strings.Contains(err.Error(), "symbolic link") {
			t.Errorf("Replace(%s): %v", p, err)
		}
	}
	if _, err := os.Lstat(filepath.Join(dir, "through")); err == nil {
		t.Error("a file was made through the dangling link")
	}
	hard := filepath.Join(dir, "hard")
	os.Link(victim, hard)
	f, err := Replace(hard, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	f.WriteString("new")
	f.Close()
	if b, _ := os.ReadFile(victim); string(b) != "keep" {
		t.Errorf("Replace wrote through a hard link: %q", b)
	}
	if b, _ := os.ReadFile(hard); string(b) != "new" {
		t.Errorf("replaced file holds %q", b)
	}
	if err := WriteAtomic(link, 0o600, func(*os.File) error { return nil }); err == nil {
		t.Error("WriteAtomic over a link")
	}
	if err := WriteAtomic(filepath.Join(dir, "a"), 0o600, func(f *os.File) error { _, err := f.WriteString("a"); return err }); err != nil {
		t.Fatal(err)
	}
	if fi, err := os.Stat(filepath.Join(dir, "a")); err != nil || fi.Mode().Perm()&0o077 != 0 || fi.Size() != 1 {
		t.Errorf("WriteAtomic's file: %v %v", fi, err)
	}
	if m, _ := filepath.Glob(filepath.Join(dir, ".*")); len(m) != 0 {
		t.Errorf("temporary files left: %v", m)
	}
}
