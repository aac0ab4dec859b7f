package graphfile

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestBadCorpus parses every file of testdata/bad. Each starts with one
// "# want: :LINE: text" comment per error it must produce, in order; the
// errors must be exactly those (a "…" in text stands for anything).
func TestBadCorpus(t *testing.T) {
	files, err := filepath.Glob("testdata/bad/*.toml")
	if err != nil {
		t.Fatal(err)
	}
	if len(files) < 30 {
		t.Fatalf("only %d bad configs; the corpus must hold at least 30", len(files))
	}
	for _, path := range files {
		t.Run(filepath.Base(path), func(t *testing.T) {
			data, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			var want []string
			for _, line := range strings.Split(string(data), "\n") {
				w, ok := strings.CutPrefix(line, "# want: ")
				if !ok {
					break
				}
				want = append(want, path+w)
			}
			if len(want) == 0 {
				t.Fatal(`no "# want: " line`)
			}
			g, err := Load(path)
			if err == nil || g != nil {
				t.Fatalf("Load = %v, %v; want no graph and an error", g, err)
			}
			list, ok := err.(ErrorList)
			if !ok {
				t.Fatalf("error %T, want ErrorList", err)
			}
			checkErrors(t, list, want)
		})
	}
}
