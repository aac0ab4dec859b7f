package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"
)

// realFlags are the flags a command's -h lists (the flag package's
// defaults, or the control client's list), read as TestUsageMatchesFlags
// reads them: independently of the command table.
func realFlags(t *testing.T, cmd string) []string {
	t.Helper()
	_, out, errs := forwarder(t, cmd, "-h")
	var real []string
	for _, l := range strings.Split(out+errs, "\n") {
		if m := flagDefault.FindStringSubmatch(l); m != nil {
			real = append(real, m[1])
		}
	}
	sort.Strings(real)
	return real
}

func sameFlags(t *testing.T, where, cmd string, got []string, real []string) {
	t.Helper()
	sort.Strings(got)
	if !slices.Equal(got, real) {
		t.Errorf("%s: forwarder %s completes/documents flags %v; its flag set has %v", where, cmd, got, real)
	}
}

// bashComplete runs the bash completion function on a command line (the
// last word is the one being completed) and returns its candidates.
func bashComplete(t *testing.T, script string, words ...string) []string {
	t.Helper()
	var quoted []string
	for _, w := range words {
		quoted = append(quoted, "'"+w+"'")
	}
	prog := script + "\nCOMP_WORDS=(" + strings.Join(quoted, " ") + ")\nCOMP_CWORD=" + strconv.Itoa(len(words)-1) +
		"\n_forwarder\nprintf '%s\\n' \"${COMPREPLY[@]}\"\n"
	out, err := exec.Command("bash", "-c", prog).CombinedOutput()
	if err != nil {
		t.Fatalf("bash: %v\n%s", err, out)
	}
	return strings.Fields(string(out))
}

// TestCompletionMatchesFlags: the bash, zsh and fish scripts offer every
// command, and for each command exactly the flags its -h lists; bash's is
// run (a dash completes the flags, -format its values, show its words,
// elements the element types); zsh and fish check the syntax of theirs
// where installed.
func TestCompletionMatchesFlags(t *testing.T) {
	scripts := map[string]string{}
	for _, sh := range []string{"bash", "zsh", "fish"} {
		code, out, errs := forwarder(t, "completion", sh)
		if code != 0 {
			t.Fatalf("completion %s: exit %d, %s", sh, code, errs)
		}
		scripts[sh] = out
	}
	if code, _, errs := forwarder(t, "completion", "bsh"); code != 2 || !strings.Contains(errs, `did you mean "bash"?`) {
		t.Errorf("completion bsh: exit %d, %q", code, errs)
	}
	zshBranch := regexp.MustCompile(`(?s)\n\t([a-z]+)\)\n\t\t_arguments(.*?)\n\t\t;;`)
	zshSpecs := map[string]string{}
	for _, m := range zshBranch.FindAllStringSubmatch(scripts["zsh"], -1) {
		zshSpecs[m[1]] = m[2]
	}
	zshFlag := regexp.MustCompile(`'-([a-z][a-z0-9-]*)\[`)
	for _, c := range commandNames {
		if !strings.Contains(scripts["zsh"], "\t\t'"+c+":") || !strings.Contains(scripts["fish"], "-n '__fish_use_subcommand' -a "+c+" ") {
			t.Errorf("zsh or fish does not offer the command %s", c)
		}
		real := realFlags(t, c)
		if _, err := exec.LookPath("bash"); err == nil {
			got := bashComplete(t, scripts["bash"], "forwarder", c, "-")
			sameFlags(t, "bash", c, trimDashes(got), real)
		}
		var z []string
		for _, m := range zshFlag.FindAllStringSubmatch(zshSpecs[c], -1) {
			z = append(z, m[1])
		}
		sameFlags(t, "zsh", c, z, real)
		fishFlag := regexp.MustCompile(`(?m)^complete -c forwarder -n '__fish_seen_subcommand_from ` + c + `' -o ([a-z0-9-]+)`)
		var f []string
		for _, m := range fishFlag.FindAllStringSubmatch(scripts["fish"], -1) {
			f = append(f, m[1])
		}
		sameFlags(t, "fish", c, f, real)
	}
	if _, err := exec.LookPath("bash"); err == nil {
		for _, c := range []struct {
			words []string
			want  []string
		}{
			{[]string{"forwarder", "sh"}, []string{"show"}},
			{[]string{"forwarder", "show", ""}, []string{"errors", "flows", "interfaces", "neighbors", "routes", "runtime"}},
			{[]string{"forwarder", "graph", "-format", ""}, []string{"dot", "png", "svg"}},
			{[]string{"forwarder", "route", "-format", "j"}, []string{"json"}},
			{[]string{"forwarder", "elements", "DecT"}, []string{"DecTTL"}},
			{[]string{"forwarder", "bench", "-element", "DecT"}, []string{"DecTTL"}},
			{[]string{"forwarder", "help", "rel"}, []string{"reload"}},
			{[]string{"forwarder", "completion", ""}, []string{"bash", "fish", "zsh"}},
		} {
			got := bashComplete(t, scripts["bash"], c.words...)
			sort.Strings(got)
			if !slices.Equal(got, c.want) {
				t.Errorf("bash: %q completes to %v, want %v", c.words, got, c.want)
			}
		}
		// A FILE value completes file names.
		dir := t.TempDir()
		os.WriteFile(filepath.Join(dir, "gw.toml"), nil, 0o644)
		if got := bashComplete(t, scripts["bash"], "forwarder", "run", "-config", dir+"/g"); !slices.Equal(got, []string{dir + "/gw.toml"}) {
			t.Errorf("bash: run -config %s/g completes to %v", dir, got)
		}
	}
	if _, err := exec.LookPath("fish"); err == nil {
		// fish answers what it would offer: complete -C LINE.
		file := filepath.Join(t.TempDir(), "forwarder.fish")
		if err := os.WriteFile(file, []byte(scripts["fish"]), 0o644); err != nil {
			t.Fatal(err)
		}
		fishComplete := func(line string) []string {
			out, err := exec.Command("fish", "-c", "source $argv[1]; complete -C $argv[2]", file, line).CombinedOutput()
			if err != nil {
				t.Fatalf("fish: complete -C %q: %v\n%s", line, err, out)
			}
			var got []string
			for _, l := range strings.Split(strings.TrimSpace(string(out)), "\n") {
				if w, _, _ := strings.Cut(l, "\t"); w != "" {
					got = append(got, w)
				}
			}
			return got
		}
		for _, c := range commandNames {
			sameFlags(t, "fish complete -C", c, trimDashes(fishComplete("forwarder "+c+" -")), realFlags(t, c))
		}
		if got := fishComplete("forwarder show "); !slices.Contains(got, "flows") || !slices.Contains(got, "runtime") {
			t.Errorf("fish: forwarder show completes to %v", got)
		}
	}
	for _, sh := range []string{"zsh", "fish"} {
		if _, err := exec.LookPath(sh); err != nil {
			t.Logf("%s not installed: its script's syntax is not checked", sh)
			continue
		}
		cmd := exec.Command(sh, "-n")
		cmd.Stdin = strings.NewReader(scripts[sh])
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Errorf("%s -n: %v\n%s", sh, err, out)
		}
	}
}

func trimDashes(flags []string) []string {
	out := make([]string, len(flags))
	for i, f := range flags {
		out[i] = strings.TrimPrefix(f, "-")
	}
	return out
}

// TestManMatchesFlags: each command's page documents exactly the flags
// its -h lists, under OPTIONS; forwarder(1) names every command; groff
// formats every page without a warning (where groff is installed); -dir
// writes one page per command and forwarder.1.
func TestManMatchesFlags(t *testing.T) {
	option := regexp.MustCompile(`(?m)^\.TP\n\.BI? \\-([a-z0-9\\-]+)`)
	dir := t.TempDir()
	code, out, errs := forwarder(t, "man", "-dir", dir)
	if code != 0 {
		t.Fatalf("man -dir: exit %d, %s", code, errs)
	}
	if n := len(strings.Fields(out)); n != len(commandNames)+1 {
		t.Errorf("man -dir wrote %d pages, want %d:\n%s", n, len(commandNames)+1, out)
	}
	main, err := os.ReadFile(filepath.Join(dir, "forwarder.1"))
	if err != nil {
		t.Fatal(err)
	}
	groff, _ := exec.LookPath("groff")
	for _, c := range commandNames {
		page, err := os.ReadFile(filepath.Join(dir, "forwarder-"+c+".1"))
		if err != nil {
			t.Fatal(err)
		}
		if _, printed, _ := forwarder(t, "man", c); printed != string(page) {
			t.Errorf("man %s prints another page than man -dir wrote", c)
		}
		if !strings.Contains(string(main), ".BR forwarder\\-"+strings.ReplaceAll(c, "-", "\\-")+" (1)") {
			t.Errorf("forwarder.1 does not refer to forwarder-%s(1)", c)
		}
		var doc []string
		for _, m := range option.FindAllStringSubmatch(string(page), -1) {
			doc = append(doc, strings.ReplaceAll(m[1], `\-`, "-"))
		}
		sameFlags(t, "man page", c, doc, realFlags(t, c))
		if groff != "" {
			out, err := exec.Command(groff, "-man", "-Tutf8", "-ww", "-z", filepath.Join(dir, "forwarder-"+c+".1")).CombinedOutput()
			if err != nil || len(out) > 0 {
				t.Errorf("groff on forwarder-%s.1: %v\n%s", c, err, out)
			}
		}
	}
	if code, _, errs := forwarder(t, "man", "rnu"); code != 2 || !strings.Contains(errs, `did you mean "run"?`) {
		t.Errorf("man rnu: exit %d, %q", code, errs)
	}
}
