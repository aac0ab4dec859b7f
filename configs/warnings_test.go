package configs_test

import (
	"io/fs"
	"testing"

	"github.com/junction-dataplane/junction/configs"
	"github.com/junction-dataplane/junction/pipeline"
)

// TestConfigsHaveNoWarnings: every shipped graph works as written:
// forwarder check has nothing to warn about (the environment is not
// checked here: their interfaces exist only in the e2e tests' namespaces).
func TestConfigsHaveNoWarnings(t *testing.T) {
	files, err := fs.Glob(configs.FS, "*.toml")
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range files {
		g, err := pipeline.Load(f)
		if err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		for _, w := range pipeline.Warnings(g) {
			t.Errorf("%s", w)
		}
	}
}
