package commentrefs

import (
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// pathToken is a word of a comment that may name a file: letters,
// digits and . _ - / only.
var pathToken = regexp.MustCompile(`[A-Za-z0-9_./-]+`)

// fileSuffixes are the suffixes that make a word without a directory
// part a file name.
var fileSuffixes = []string{".go", ".md", ".toml", ".sh", ".c", ".h"}

// external are files of other projects that comments cite by name.
var external = map[string]bool{
	"nf_conntrack_proto_tcp.c": true, // Linux's TCP connection tracking
}

// TestCommentsNameExistingFiles: every path a Go comment names (a word
// with a directory part under one of the repository's top-level
// directories, or a name ending in .go, .md, .toml, .sh, .c or .h)
// resolves from the repository root or from the commenting file's own
// directory. A bare name other than a Go file's ("router.toml",
// "e2e-tcp.sh") may also name a file elsewhere in the repository: it
// fails only when no file of the repository has that name. (A bare Go
// file name is one of the commenting package's.) Import paths, URLs, absolute paths, prose
// with slashes ("ns/packet", "TCP/IP"), placeholders ("benchmarks/NAME.sh",
// "t.toml") and external files are not checked.
func TestCommentsNameExistingFiles(t *testing.T) {
	root := repoRoot(t)
	tops := map[string]bool{}
	ents, err := os.ReadDir(root)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range ents {
		if e.IsDir() && !strings.HasPrefix(e.Name(), ".") {
			tops[e.Name()] = true
		}
	}
	names := map[string]bool{} // the base name of every file of the repository
	err = filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && path != root && d.Name() == ".git" {
			return filepath.SkipDir
		}
		names[d.Name()] = true
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	fset := token.NewFileSet()
	files := 0
	err = filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if path != root && (strings.HasPrefix(d.Name(), ".") || d.Name() == "testdata" || d.Name() == "vendor") {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") {
			return nil
		}
		f, err := parser.ParseFile(fset, path, nil, parser.ParseComments)
		if err != nil {
			return nil // a file that does not parse is the compiler's business
		}
		files++
		dir := filepath.Dir(path)
		for _, cg := range f.Comments {
			for _, c := range cg.List {
				for _, m := range pathToken.FindAllStringIndex(c.Text, -1) {
					word := c.Text[m[0]:m[1]]
					if !isRepoPath(word, c.Text, m[0], m[1], tops) {
						continue
					}
					p := strings.TrimRight(word, ".-")
					if exists(filepath.Join(root, p)) || exists(filepath.Join(dir, p)) ||
						!strings.Contains(p, "/") && !strings.HasSuffix(p, ".go") && names[p] {
						continue
					}
					if parent, last := filepath.Split(p); strings.Contains(p, "/") && filepath.Ext(last) == "" &&
						(exists(filepath.Join(root, parent)) || exists(filepath.Join(dir, parent))) {
						continue // a placeholder or a program in an existing directory: "configs/plugins/name"
					}
					rel, _ := filepath.Rel(root, path)
					t.Errorf("%s:%d: the comment names %s, which does not exist (from the repository root or %s)",
						rel, fset.Position(c.Pos()).Line, p, filepath.Dir(rel))
				}
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if files < 100 {
		t.Fatalf("only %d Go files read under %s", files, root)
	}
}

// isRepoPath tells whether word, at text[i:j], names a file or directory
// of the repository.
func isRepoPath(word, text string, i, j int, tops map[string]bool) bool {
	if i > 0 && strings.ContainsRune(`/~$%<*@:`, rune(text[i-1])) {
		return false // an absolute path, a URL's path, a pattern, a variable
	}
	if j < len(text) && strings.ContainsRune(`*<{%@`, rune(text[j])) {
		return false // a pattern: "fastpath_*.o", "<name>.sock"
	}
	w := strings.TrimRight(word, ".-")
	if strings.Contains(w, "...") || strings.HasPrefix(w, ".") || strings.Contains(w, "//") {
		return false
	}
	base := w[strings.LastIndexByte(w, '/')+1:]
	if external[base] || placeholder.MatchString(w) {
		return false
	}
	if first, _, ok := strings.Cut(w, "/"); ok {
		return tops[first]
	}
	for _, s := range fileSuffixes {
		if strings.HasSuffix(w, s) && len(w) > len(s) {
			return true
		}
	}
	return false
}

// placeholder matches a path with an upper-case component ("NAME.sh",
// "FILE") or a one-letter file name ("t.toml"): an example, not a file.
var placeholder = regexp.MustCompile(`(^|/)([A-Z][A-Z0-9_]+(\.[a-z]+)?|[a-z]\.[a-z]+)$`)

func exists(p string) bool {
	_, err := os.Stat(p)
	return err == nil
}

// repoRoot is the directory of the main module's go.mod.
func repoRoot(t *testing.T) string {
	dir, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	for {
		if exists(filepath.Join(dir, "go.mod")) {
			return dir
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			t.Fatal("no go.mod above the test's directory")
		}
		dir = parent
	}
}
