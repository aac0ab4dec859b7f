package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/junction-dataplane/junction/internal/pcaptest"
)

// capture -w creates its file: an existing file, or a symbolic link
// another user could have planted in a shared directory, is neither
// followed nor truncated, even when nothing is captured; -force replaces
// a regular file by a new one and still refuses a link.
func TestCaptureFileHostile(t *testing.T) {
	path := ctlRouter(t)
	dir := t.TempDir()
	victim := filepath.Join(dir, "passwd")
	const keep = "root:x:0:0::/root:/bin/sh\n"
	if err := os.WriteFile(victim, []byte(keep), 0o644); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(dir, "cap.pcap")
	if err := os.Symlink(victim, link); err != nil {
		t.Fatal(err)
	}
	dangling := filepath.Join(dir, "dangling.pcap")
	if err := os.Symlink(filepath.Join(dir, "made-through-link"), dangling); err != nil {
		t.Fatal(err)
	}
	hard := filepath.Join(dir, "hard.pcap")
	if err := os.Link(victim, hard); err != nil {
		t.Fatal(err)
	}
	// A filter that matches nothing: the capture times out with no
	// packets, and must not write an empty pcap over the file.
	none := []string{"-element", "rt", "-n", "1", "-timeout", "200ms", "tcp"}
	for _, c := range []struct {
		file  string
		force bool
		want  string
	}{
		{victim, false, "exists: not overwritten"},
		{link, false, "exists: not overwritten"},
		{link, true, "symbolic link: not followed"},
		{dangling, false, "exists: not overwritten"},
		{dangling, true, "symbolic link: not followed"},
		{hard, false, "exists: not overwritten"},
	} {
		args := append([]string{"capture", "-w", c.file}, none...)
		if c.force {
			args = append(args, "-force")
		}
		code, out, errs := ctl(t, path, args...)
		if code != 1 || !strings.Contains(errs, c.want) {
			t.Errorf("%v: exit %d %q %q, want 1 and %q", args, code, out, errs, c.want)
		}
		if b, _ := os.ReadFile(victim); string(b) != keep {
			t.Fatalf("%v: the link's target now holds %q", args, b)
		}
	}
	if _, err := os.Lstat(filepath.Join(dir, "made-through-link")); err == nil {
		t.Error("a file was created through a dangling link")
	}

	// -force on a regular file replaces it: a new file, the old content
	// kept by its other name.
	code, out, errs := ctl(t, path, append([]string{"capture", "-w", hard, "-force"}, none...)...)
	if code != 0 {
		t.Fatalf("-force: exit %d %q %q", code, out, errs)
	}
	if n := len(pcaptest.Read(t, hard)); n != 0 {
		t.Errorf("%d packets, want none", n)
	}
	if b, _ := os.ReadFile(victim); string(b) != keep {
		t.Errorf("-force wrote through a hard link: %q", b)
	}
	// A new name is created.
	fresh := filepath.Join(dir, "new.pcap")
	if code, out, errs := ctl(t, path, append([]string{"capture", "-w", fresh}, none...)...); code != 0 {
		t.Fatalf("new file: exit %d %q %q", code, out, errs)
	}
	if fi, err := os.Lstat(fresh); err != nil || !fi.Mode().IsRegular() {
		t.Errorf("new file: %v %v", fi, err)
	}
}
