package pcap

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/google/gopacket/layers"

	"github.com/junction-dataplane/junction/drivers"
)

// Files a graph names that are not what a pcap device may read or write:
// open and check refuse each with the same words, quickly (a FIFO must not
// block either), and write nothing through a link.
func TestHostileFiles(t *testing.T) {
	dir := t.TempDir()
	good := filepath.Join(dir, "in.pcap")
	writeFile(t, good, layers.LinkTypeEthernet, frames(2, 7))
	fifo := filepath.Join(dir, "fifo")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	victim := filepath.Join(dir, "victim")
	const keep = "do not truncate\n"
	if err := os.WriteFile(victim, []byte(keep), 0o644); err != nil {
		t.Fatal(err)
	}
	toVictim := filepath.Join(dir, "out.pcap")
	os.Symlink(victim, toVictim)
	loop := filepath.Join(dir, "loop.pcap")
	os.Symlink(loop, loop)
	toRead := filepath.Join(dir, "in-link.pcap")
	os.Symlink(good, toRead)
	hardRead := filepath.Join(dir, "in-hard.pcap")
	if err := os.Link(good, hardRead); err != nil {
		t.Fatal(err)
	}
	readLink := filepath.Join(dir, "read-link.pcap")
	os.Symlink(filepath.Join(dir, "w.pcap"), readLink)
	writeFile(t, filepath.Join(dir, "w.pcap"), layers.LinkTypeEthernet, frames(1, 7))

	for _, c := range []struct {
		name string
		cfg  Config
		key  string
		want string
	}{
		{"read FIFO", Config{Read: fifo}, "read", "not a regular file but a FIFO"},
		{"read device", Config{Read: "/dev/zero"}, "read", "not a regular file but a character device"},
		{"write FIFO", Config{Write: fifo}, "write", "not a regular file but a FIFO"},
		{"write device", Config{Write: "/dev/null"}, "write", "not a regular file but a character device"},
		{"write link", Config{Write: toVictim}, "write", "symbolic link: not followed"},
		{"write link loop", Config{Write: loop}, "write", "symbolic link: not followed"},
		{"write is read through a link", Config{Read: good, Write: toRead}, "write", "symbolic link: not followed"},
		{"write is read through a hard link", Config{Read: good, Write: hardRead}, "write", "also the read file"},
		{"read is write through a link", Config{Read: readLink, Write: filepath.Join(dir, "w.pcap")}, "write", "also the read file"},
	} {
		t.Run(c.name, func(t *testing.T) {
			for _, how := range []string{"open", "check"} {
				done := make(chan error, 1)
				go func() {
					if how == "check" {
						cfg := c.cfg
						_, err := check(&cfg, drivers.OpenContext{Name: "p", Workers: 1})
						done <- err
						return
					}
					d, err := openPcap(t, c.cfg, drivers.OpenContext{Workers: 1})
					if err == nil {
						d.Close()
					}
					done <- err
				}()
				var err error
				select {
				case err = <-done:
				case <-time.After(5 * time.Second):
					t.Fatalf("%s: still blocked after 5 s", how)
				}
				if err == nil || !strings.Contains(err.Error(), c.want) || !strings.Contains(err.Error(), `key "`+c.key+`"`) {
					t.Errorf("%s: %v, want key %q and %q", how, err, c.key, c.want)
				}
			}
		})
	}
	if b, _ := os.ReadFile(victim); string(b) != keep {
		t.Errorf("written through a link: %q", b)
	}
	if st, err := os.Stat(good); err != nil || st.Size() == 0 {
		t.Errorf("read file damaged: %v %v", st, err)
	}
}

// An existing write file is replaced by a new one: another name for the
// old one (a hard link) keeps its content.
func TestWriteReplaces(t *testing.T) {
	dir := t.TempDir()
	out := filepath.Join(dir, "out.pcap")
	os.WriteFile(out, []byte("old"), 0o644)
	other := filepath.Join(dir, "other")
	if err := os.Link(out, other); err != nil {
		t.Fatal(err)
	}
	d, err := openPcap(t, Config{Write: out}, drivers.OpenContext{Workers: 1})
	if err != nil {
		t.Fatal(err)
	}
	if err := d.Close(); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(other); string(b) != "old" {
		t.Errorf("the other name holds %q", b)
	}
	if st, err := os.Stat(out); err != nil || st.Size() != pcapHeaderLen {
		t.Errorf("out: %v %v", st, err)
	}
	if m, _ := filepath.Glob(filepath.Join(dir, ".*tmp*")); len(m) != 0 {
		t.Errorf("temporary files left: %v", m)
	}
}
