package main

import (
	"net"
	"path/filepath"
	"strings"
	"testing"
)

// TestExitStatusEveryCommand holds every subcommand to the rule of its
// usage and README: 0 done, 1 failed, 2 wrong usage (an unknown flag, a
// bad flag value, a stray argument). The commands that talk to a
// forwarder are also tried against a socket path where none runs (no
// file, and a socket file nobody listens on): 1, with a message that
// says so.
func TestExitStatusEveryCommand(t *testing.T) {
	dir := t.TempDir()
	none := filepath.Join(dir, "none.sock")
	stale := filepath.Join(dir, "stale.sock")
	l, err := net.ListenUnix("unix", &net.UnixAddr{Name: stale, Net: "unix"})
	if err != nil {
		t.Fatal(err)
	}
	l.SetUnlinkOnClose(false)
	l.Close() // the file stays, nothing listens
	pcap := filepath.Join(dir, "out.pcap")

	type tc struct {
		args []string
		code int
		want string // in stderr
	}
	cases := map[string][]tc{
		"run": {
			{[]string{"run", "-duration", "50ms", "-stats", "off", "-control", "off", "-quiet"}, 0, ""},
			{[]string{"run", "-duration", "-1s", "-stats", "off"}, 2, "-duration must be ≥ 0"},
			{[]string{"run", "-duration", "x"}, 2, "invalid value"},
			{[]string{"run", "a.toml", "b.toml"}, 2, "unexpected arguments"},
			{[]string{"run", "-config", "/no/such.toml", "-stats", "off"}, 1, "no such file"},
		},
		"check": {
			{[]string{"check"}, 0, ""},
			{[]string{"check", "-strict=maybe"}, 2, "invalid boolean value"},
			{[]string{"check", "a.toml", "b.toml"}, 2, "unexpected arguments"},
			{[]string{"check", "/no/such.toml"}, 1, "no such file"},
		},
		"graph": {
			{[]string{"graph"}, 0, ""},
			{[]string{"graph", "-format", "xml"}, 2, "-format must be"},
			{[]string{"graph", "-interval", "-1s"}, 2, "-interval must not be negative"},
			{[]string{"graph", "-plain", "-control", none}, 2, "-plain draws no counters"},
			{[]string{"graph", "-stats", "x", "-live"}, 2, "give one"},
			{[]string{"graph", "a.toml", "b.toml"}, 2, "unexpected arguments"},
			{[]string{"graph", "-control", none}, 1, "no forwarder at " + none},
			{[]string{"graph", "-control", stale}, 1, "nothing listens on it"},
		},
		"elements": {
			{[]string{"elements", "DecTTL"}, 0, ""},
			{[]string{"elements", "DecTTL", "Tee"}, 2, "one element type at a time"},
			{[]string{"elements", "-x"}, 2, "flag provided but not defined"},
			{[]string{"elements", "NoSuch"}, 1, "unknown element type"},
		},
		"drivers": {
			{[]string{"drivers", "gen"}, 0, ""},
			{[]string{"drivers", "gen", "pcap"}, 2, "one driver at a time"},
			{[]string{"drivers", "gem"}, 1, "unknown driver"},
		},
		"stats": {
			{[]string{"stats", "extra"}, 2, "unexpected arguments"},
			{[]string{"stats", "-format", "xml"}, 2, "-format must be"},
			{[]string{"stats", "-addr", "127.0.0.1:1"}, 1, "stats endpoint 127.0.0.1:1"},
		},
		"bench": {
			{[]string{"bench", "-element", "DecTTL", "-duration", "20ms"}, 0, ""},
			{[]string{"bench"}, 2, "usage: forwarder bench"},
			{[]string{"bench", "-element", "DecTTL", "extra"}, 2, "unexpected arguments"},
			{[]string{"bench", "-element", "DecTTL", "-duration", "-1s"}, 2, "-duration must be positive"},
			{[]string{"bench", "-element", "NoSuch"}, 2, "unknown element type"},
			{[]string{"bench", "-element", "DecTTL", "-set", "x"}, 2, "want key=value"},
			{[]string{"bench", "-element", "DecTTL", "-set", "foo=1"}, 2, `key "foo": unknown`},
			{[]string{"bench", "-element", "DecTTL", "-traffic", "size=abc"}, 2, `key "size"`},
			{[]string{"bench", "-config", "/no/such.toml"}, 1, "no such file"},
		},
		"routes": {
			{[]string{"routes", "-generate", "3"}, 0, ""},
			{[]string{"routes", "10.0.0.1"}, 0, ""},
			{[]string{"routes", "not-an-address"}, 2, "is not an IPv4 or IPv6 address"},
			{[]string{"routes", "-generate", "-5"}, 2, "≥ 0"},
			{[]string{"routes", "-generate", "3", "-ports", "0"}, 2, "-ports must be ≥ 1"},
			{[]string{"routes", "-generate", "3", "-ecmp", "2"}, 2, "want a share from 0 to 1"},
			{[]string{"routes", "-generate", "3", "10.0.0.1"}, 2, "do not apply"},
			{[]string{"routes", "-seed", "3"}, 2, "only with -generate"},
			{[]string{"routes", "-element", "nosuch"}, 1, `no IPLookup element named "nosuch"`},
		},
		"show": {
			{[]string{"show", "-control", none}, 2, "what?"},
			{[]string{"show", "-control", none, "runtme"}, 2, `did you mean "runtime"`},
			{[]string{"show", "-control", none, "-format", "xml", "runtime"}, 2, "want table or json"},
			{[]string{"show", "-control"}, 2, "flag needs an argument"},
			{[]string{"show", "-control", none, "runtime"}, 1, "no forwarder at " + none},
			{[]string{"show", "-control", stale, "runtime"}, 1, "nothing listens on it"},
		},
		"clear": {
			{[]string{"clear", "-control", none}, 2, `want "clear counters"`},
			{[]string{"clear", "-control", none, "counters", "extra"}, 2, `want "clear counters"`},
			{[]string{"clear", "-control", none, "counters"}, 1, "no forwarder at"},
		},
		"route": {
			{[]string{"route", "-control", none}, 2, "want add, del, replace or reload"},
			{[]string{"route", "-control", none, "dl", "10.0.0.0/8"}, 2, `did you mean "del"`},
			{[]string{"route", "-control", none, "del", "10.0.0.0/8"}, 1, "no forwarder at"},
			{[]string{"route", "-control", stale, "reload"}, 1, "nothing listens on it"},
		},
		"trace": {
			{[]string{"trace", "-control", none, "-format", "yaml"}, 2, "want table or json"},
			{[]string{"trace", "-control", none}, 1, "no forwarder at"},
		},
		"capture": {
			{[]string{"capture", "-control", none, "-element", "rt"}, 2, "-w FILE.pcap is required"},
			{[]string{"capture", "-control", none, "-element", "rt", "-w", pcap}, 1, "no forwarder at"},
		},
		"reload": {
			{[]string{"reload", "-control", none, "extra"}, 2, "unexpected arguments"},
			{[]string{"reload", "-control", none}, 1, "no forwarder at"},
			{[]string{"reload", "-control", stale, "-dry-run"}, 1, "nothing listens on it"},
			{[]string{"reload", "-dry-run", "-running", "/no/a.toml", "-config", "/no/b.toml"}, 1, "no such file"},
		},
		"features": {
			{[]string{"features", "extra"}, 2, "takes no arguments"},
			{[]string{"features", "-format", "xml"}, 2, "want table or json"},
		},
		"completion": {
			{[]string{"completion", "bash"}, 0, ""},
			{[]string{"completion"}, 2, "want one shell"},
			{[]string{"completion", "csh"}, 2, `shell "csh": want bash, zsh or fish`},
			{[]string{"completion", "-x"}, 2, "flag provided but not defined"},
		},
		"man": {
			{[]string{"man", "run"}, 0, ""},
			{[]string{"man", "nosuch"}, 2, `unknown command "nosuch"`},
			{[]string{"man", "run", "check"}, 2, "one command at a time"},
			{[]string{"man", "-dir", dir, "run"}, 2, "-dir writes every page"},
			{[]string{"man", "-dir", filepath.Join(stale, "x")}, 1, "not a directory"},
		},
		"version": {
			{[]string{"version"}, 0, ""},
			{[]string{"version", "extra"}, 2, "takes no arguments"},
			{[]string{"version", "-x"}, 2, "flag provided but not defined"},
		},
		"help": {
			{[]string{"help", "run"}, 0, ""},
			{[]string{"help", "nosuch"}, 2, `unknown command "nosuch"`},
			{[]string{"help", "run", "check"}, 2, "one command at a time"},
		},
	}
	for _, name := range commandNames {
		if len(cases[name]) == 0 {
			t.Errorf("%s: no cases: every subcommand has its exit statuses checked", name)
		}
	}
	for name, cs := range cases {
		for _, c := range cs {
			code, _, errs := forwarder(t, c.args...)
			if code != c.code || !strings.Contains(errs, c.want) {
				t.Errorf("%s: %q: exit %d, stderr %q; want exit %d and %q", name, c.args, code, errs, c.code, c.want)
			}
		}
	}
	if code, _, errs := forwarder(t, "nosuch"); code != 2 || !strings.Contains(errs, "unknown command") {
		t.Errorf("an unknown command: exit %d, stderr %q", code, errs)
	}
}
