package docs

import (
	"bytes"
	"flag"
	"fmt"
	"os"
	"strings"
	"testing"

	"github.com/junction-dataplane/junction/drivers"
	_ "github.com/junction-dataplane/junction/drivers/all"
	"github.com/junction-dataplane/junction/elements"
	_ "github.com/junction-dataplane/junction/elements/all"
	_ "github.com/junction-dataplane/junction/plugins/host"
)

var update = flag.Bool("update", false, "rewrite elements.md and drivers.md from the registries")

// TestCatalogue checks that elements.md and drivers.md are the manuals the
// registries hold (what `forwarder elements TYPE` and `forwarder drivers
// NAME` print). After changing an element's or a driver's documentation:
//
//	go test ./docs -run TestCatalogue -update
func TestCatalogue(t *testing.T) {
	check(t, "elements.md", elementCatalogue(t))
	check(t, "drivers.md", driverCatalogue(t))
}

func check(t *testing.T, file string, want []byte) {
	t.Helper()
	if *update {
		if err := os.WriteFile(file, want, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	got, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("docs/%s differs from the registries' manuals: run go test ./docs -run TestCatalogue -update", file)
	}
}

const generated = "<!-- Generated from the registries by TestCatalogue (docs/catalog_test.go): go test ./docs -run TestCatalogue -update -->\n\n"

func elementCatalogue(t *testing.T) []byte {
	var b bytes.Buffer
	b.WriteString(generated)
	b.WriteString("# Element catalogue\n\n")
	b.WriteString("Every element type of a standard build (`elements/all` and the Plugin element), with the manual\n")
	b.WriteString("`forwarder elements TYPE` prints: synopsis, ports, keys with their defaults, counters and drop\n")
	b.WriteString("reasons, an example. Inline arguments fill the keys in the order listed; `KEY = VALUE` after them sets one by name.\n\n")
	var types []*elements.Type
	for _, n := range elements.Names() {
		ty, _ := elements.Lookup(n)
		if strings.HasPrefix(n, "Test") || strings.Contains(n, "Test") {
			continue // registered by tests
		}
		types = append(types, ty)
	}
	b.WriteString("| element | summary |\n|---|---|\n")
	for _, ty := range types {
		fmt.Fprintf(&b, "| [`%s`](#%s) | %s |\n", ty.Name, strings.ToLower(ty.Name), strings.ReplaceAll(ty.Doc.Summary, "|", "\\|"))
	}
	for _, ty := range types {
		if err := elements.CheckDoc(ty); err != nil {
			t.Error(err)
		}
		fmt.Fprintf(&b, "\n## %s\n\n```text\n", ty.Name)
		if err := elements.WriteDoc(&b, ty); err != nil {
			t.Fatal(err)
		}
		b.WriteString("```\n")
	}
	return b.Bytes()
}

func driverCatalogue(t *testing.T) []byte {
	var b bytes.Buffer
	b.WriteString(generated)
	b.WriteString("# Driver catalogue\n\n")
	b.WriteString("A `[devices.NAME]` table names its driver and that driver's keys (besides `driver`, and the\n")
	b.WriteString("`addresses` and `mac` every device takes). `forwarder drivers NAME` prints the same manual:\n")
	b.WriteString("what the driver does, its queues, keys with their defaults, counters, an example.\n\n")
	var ds []*drivers.Driver
	for _, n := range drivers.Names() {
		d, _ := drivers.Lookup(n)
		ds = append(ds, d)
	}
	b.WriteString("| driver | summary |\n|---|---|\n")
	for _, d := range ds {
		fmt.Fprintf(&b, "| [`%s`](#%s) | %s |\n", d.Name, d.Name, strings.ReplaceAll(d.Doc.Summary, "|", "\\|"))
	}
	for _, d := range ds {
		if err := drivers.CheckDoc(d); err != nil {
			t.Error(err)
		}
		fmt.Fprintf(&b, "\n## %s\n\n```text\n", d.Name)
		if err := drivers.WriteDoc(&b, d); err != nil {
			t.Fatal(err)
		}
		b.WriteString("```\n")
	}
	return b.Bytes()
}
