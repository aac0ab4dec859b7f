package configs_test

import (
	"io/fs"
	"path/filepath"
	"strings"
	"testing"

	"github.com/junction-dataplane/junction/configs"
	"github.com/junction-dataplane/junction/pipeline"
)

// TestEveryConfigLoads checks every example graph: it must load and
// validate, and its DOT rendering must name every element.
func TestEveryConfigLoads(t *testing.T) {
	files, err := fs.Glob(configs.FS, "*.toml")
	if err != nil || len(files) < 2 {
		t.Fatalf("configs: %v %v", files, err)
	}
	for _, f := range files {
		t.Run(f, func(t *testing.T) {
			g, err := pipeline.Load(filepath.Join(".", f))
			if err != nil {
				t.Fatal(err)
			}
			if len(g.Elements) == 0 || len(g.Links) == 0 {
				t.Fatalf("%s: empty graph", f)
			}
			dot := g.DOT()
			for _, e := range g.Elements {
				if !strings.Contains(dot, e.Type.Name) {
					t.Errorf("DOT lacks %s", e.Type.Name)
				}
			}
		})
	}
}
