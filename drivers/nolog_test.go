package drivers

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// globalLog are the log package's functions that use its global logger.
var globalLog = map[string]bool{
	"Print": true, "Printf": true, "Println": true, "Fatal": true, "Fatalf": true, "Fatalln": true,
	"Panic": true, "Panicf": true, "Panicln": true, "Output": true, "Default": true, "Writer": true,
	"SetOutput": true, "SetFlags": true, "SetPrefix": true,
}

// TestNoGlobalLog: drivers and elements write their messages for the
// operator to the Log they were given (OpenContext.Logf,
// elements.Context.Logf), which is the router's log; the log package's
// global logger would bypass it (forwarder run's stderr only by chance,
// and not the log a test or an embedding program passes).
func TestNoGlobalLog(t *testing.T) {
	for _, root := range []string{".", "../elements"} {
		err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			if d.IsDir() && d.Name() == "testdata" {
				return filepath.SkipDir
			}
			if d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
				return nil
			}
			fset := token.NewFileSet()
			f, err := parser.ParseFile(fset, path, nil, 0)
			if err != nil {
				return err
			}
			name := ""
			for _, imp := range f.Imports {
				if p, _ := strconv.Unquote(imp.Path.Value); p == "log" {
					name = "log"
					if imp.Name != nil {
						name = imp.Name.Name
					}
				}
			}
			if name == "" {
				return nil
			}
			ast.Inspect(f, func(n ast.Node) bool {
				if sel, ok := n.(*ast.SelectorExpr); ok {
					if x, ok := sel.X.(*ast.Ident); ok && x.Name == name && globalLog[sel.Sel.Name] {
						t.Errorf("%s: log.%s: write to the Log the driver or element was given (OpenContext.Logf, Context.Logf)", fset.Position(sel.Pos()), sel.Sel.Name)
					}
				}
				return true
			})
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
}
