package main

import (
	"os"
	"regexp"
	"runtime/debug"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"
)

// TestHelpEveryCommand: -h on every subcommand prints its usage and exits
// 0; forwarder help CMD prints the same on stdout.
func TestHelpEveryCommand(t *testing.T) {
	for _, c := range commandNames {
		code, out, errs := forwarder(t, c, "-h")
		if c == "help" {
			// "help -h" asks for the help of a command named "-h".
			continue
		}
		if code != 0 || !strings.Contains(out+errs, "usage: forwarder "+c) {
			t.Errorf("%s -h: exit %d, output %q", c, code, out+errs)
		}
		code, out, _ = forwarder(t, "help", c)
		if code != 0 || !strings.Contains(out, "usage: forwarder "+c) {
			t.Errorf("help %s: exit %d, stdout %q", c, code, out)
		}
	}
	if code, _, errs := forwarder(t, "help", "rn"); code != 2 || !strings.Contains(errs, `did you mean "run"?`) {
		t.Errorf("help rn: exit %d, stderr %q", code, errs)
	}
	if code, out, _ := forwarder(t, "help"); code != 0 || !strings.Contains(out, "forwarder version") {
		t.Errorf("help: exit %d, stdout %q", code, out)
	}
}

// TestExitStatus: 2 for wrong usage, 1 for a failure, 0 for done.
func TestExitStatus(t *testing.T) {
	for _, c := range []struct {
		args []string
		code int
		want string // in stderr
	}{
		{[]string{"elements", "-x"}, 2, "flag provided but not defined"},
		{[]string{"elements", "DecTTL", "Tee"}, 2, "one element type at a time"},
		{[]string{"elements", "NoSuch"}, 1, "unknown element type"},
		{[]string{"drivers", "gen", "pcap"}, 2, "one driver at a time"},
		{[]string{"check", "a.toml", "b.toml"}, 2, "unexpected arguments"},
		{[]string{"check", "-config", "a.toml", "b.toml"}, 2, "both -config"},
		{[]string{"check", "/no/such/file.toml"}, 1, "no such file"},
		{[]string{"run", "-cpus", "4096", "-stats", "off"}, 2, "CPU 4096 does not exist"},
		{[]string{"run", "-cpus", "0,0", "-stats", "off"}, 2, "listed twice"},
		{[]string{"run", "-cpus", "0", "-nopin", "-stats", "off"}, 2, "-cpus pins the workers"},
		{[]string{"run", "-workers", "4096", "-stats", "off"}, 2, "more workers than"},
		{[]string{"run", "-workers", "-1", "-stats", "off"}, 2, "-workers must be"},
		{[]string{"version", "extra"}, 2, "takes no arguments"},
		{[]string{"bench", "-element", "DecTTL", "-duration", "0s"}, 2, "-duration must be positive"},
		{[]string{"bench", "-element", "DecTTL", "-batch", "0"}, 2, "-batch 0"},
		{[]string{"bench", "-config", "x.toml", "-element", "DecTTL"}, 2, "do not apply"},
		{[]string{"stats", "-format", "xml"}, 2, "-format must be"},
		{[]string{"routes", "not-an-address"}, 2, "is not an IPv4 or IPv6 address"},
		{[]string{"bench", "-element", "NoSuchElement"}, 2, "unknown element type"},
		{[]string{"version"}, 0, ""},
	} {
		code, _, errs := forwarder(t, c.args...)
		if code != c.code || !strings.Contains(errs, c.want) {
			t.Errorf("%v: exit %d, stderr %q; want exit %d and %q", c.args, code, errs, c.code, c.want)
		}
	}
}

// TestRunManyWorkersNoPin: -nopin allows more workers than CPUs.
func TestRunManyWorkersNoPin(t *testing.T) {
	n := len(onlineCPUs()) + 1
	code, out, errs := forwarder(t, "run", "-workers", strconv.Itoa(n), "-nopin", "-duration", "100ms", "-stats", "off", "-quiet")
	if code != 0 || !strings.Contains(out, "total:") {
		t.Errorf("exit %d\nstdout %s\nstderr %s", code, out, errs)
	}
}

func TestCheckWorkers(t *testing.T) {
	two := []int{0, 1}
	for _, c := range []struct {
		flag, graph int
		nopin       bool
		cpus        []int
		usage, fail bool
	}{
		{flag: 2, cpus: nil},
		{flag: 3, usage: true},
		{flag: 3, nopin: true},
		{graph: 3, fail: true},
		{graph: 2},
		{flag: 2, cpus: []int{1}, usage: true},
		{flag: 1, cpus: []int{1}},
		{flag: 1, graph: 4}, // the flag overrides the graph
	} {
		err := checkWorkers(c.flag, c.graph, c.nopin, c.cpus, two)
		switch {
		case c.usage && !isUsage(err), c.fail && (err == nil || isUsage(err)), !c.usage && !c.fail && err != nil:
			t.Errorf("%+v: %v", c, err)
		}
	}
}

func TestVersionText(t *testing.T) {
	bi := &debug.BuildInfo{GoVersion: "go1.26.0", Main: debug.Module{Path: "github.com/junction-dataplane/junction", Version: "v1.2.3"},
		Settings: []debug.BuildSetting{{Key: "vcs.revision", Value: "abc123"}, {Key: "vcs.time", Value: "2026-01-01T00:00:00Z"}, {Key: "vcs.modified", Value: "true"}}}
	got := versionText(bi, true)
	for _, w := range []string{"v1.2.3", "revision abc123 (2026-01-01T00:00:00Z), modified", "go1.26.0"} {
		if !strings.Contains(got, w) {
			t.Errorf("version text lacks %q:\n%s", w, got)
		}
	}
	if got := versionText(nil, false); !strings.Contains(got, "no build information") {
		t.Errorf("no build info: %q", got)
	}
}

// requiredFlags are the flags a usage line may write without brackets: each
// is what selects one form of its command.
var requiredFlags = map[string][]string{
	"bench":   {"element", "config"},
	"routes":  {"generate"},
	"capture": {"element", "w"},
}

var (
	flagMention = regexp.MustCompile(`(^|[\s\[|])-([a-z][a-z0-9-]*)`)
	flagDefault = regexp.MustCompile(`^  -([a-z][a-z0-9-]*)`)
)

// usageFlags reads a usage block: for each "forwarder CMD ..." line (and
// the continuation lines indented under it), the flags it mentions, and
// whether each is bracketed.
func usageFlags(t *testing.T, block string) map[string]map[string]bool {
	t.Helper()
	out := map[string]map[string]bool{}
	cmd := ""
	// [CONTROL] as the synopses expand it (cmdtable.go); the flags are
	// then checked against the commands' real flag sets all the same.
	block = strings.ReplaceAll(block, "[CONTROL]", controlSynopsis)
	for _, line := range strings.Split(block, "\n") {
		trimmed := strings.TrimSpace(line)
		switch {
		case strings.HasPrefix(trimmed, "forwarder "):
			cmd = strings.Fields(trimmed)[1]
		case strings.HasPrefix(trimmed, "["):
			// A continuation of cmd's synopsis.
		default:
			cmd = ""
			continue
		}
		if out[cmd] == nil {
			out[cmd] = map[string]bool{}
		}
		// The synopsis ends where the description column starts (two
		// or more spaces followed by a lower-case word).
		syn := regexp.MustCompile(`\s{2,}[a-z][a-z ,'()/:-]*$`).ReplaceAllString(trimmed, "")
		for _, m := range flagMention.FindAllStringSubmatchIndex(syn, -1) {
			name := syn[m[4]:m[5]]
			bracketed := m[2] < m[3] && syn[m[2]] == '[' || strings.LastIndex(syn[:m[4]], "[") > strings.LastIndex(syn[:m[4]], "]")
			out[cmd][name] = out[cmd][name] || !bracketed
		}
	}
	return out
}

// checkUsageBlock compares a usage block with the commands' real flag sets
// (their -h output).
func checkUsageBlock(t *testing.T, where, block string) {
	t.Helper()
	got := usageFlags(t, block)
	for _, c := range commandNames {
		if _, ok := got[c]; !ok {
			t.Errorf("%s: no line for forwarder %s", where, c)
		}
	}
	for cmd, mentioned := range got {
		_, out, errs := forwarder(t, cmd, "-h")
		var real []string
		for _, l := range strings.Split(out+errs, "\n") {
			if m := flagDefault.FindStringSubmatch(l); m != nil {
				real = append(real, m[1])
			}
		}
		var doc []string
		for f, unbracketed := range mentioned {
			doc = append(doc, f)
			if unbracketed && !slices.Contains(requiredFlags[cmd], f) {
				t.Errorf("%s: forwarder %s: -%s is optional but not in brackets", where, cmd, f)
			}
		}
		sort.Strings(real)
		sort.Strings(doc)
		if !slices.Equal(real, doc) {
			t.Errorf("%s: forwarder %s mentions flags %v; its flag set has %v", where, cmd, doc, real)
		}
	}
}

// TestUsageMatchesFlags: the usage block of docs/cli.md and forwarder's
// own usage name every flag of every command, and no other, with optional
// flags in brackets.
func TestUsageMatchesFlags(t *testing.T) {
	readme, err := os.ReadFile("../../docs/cli.md")
	if err != nil {
		t.Fatal(err)
	}
	text := string(readme)
	i := strings.Index(text, "```\nforwarder run ")
	if i < 0 {
		t.Fatal("docs/cli.md has no usage block starting with forwarder run")
	}
	block := text[i+4:]
	block = block[:strings.Index(block, "```")]
	checkUsageBlock(t, "docs/cli.md", block)
	checkUsageBlock(t, "forwarder help", usage[strings.Index(usage, "Usage:"):strings.Index(usage, "\nrun ")])
}
