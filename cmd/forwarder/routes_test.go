package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/junction-dataplane/junction/elements/ip"
)

func TestRoutesCmd(t *testing.T) {
	var out, errb bytes.Buffer
	code := Main([]string{"routes", "-config", "../../configs/router.toml", "10.16.1.1", "10.1.0.9", "2001:db8::1"}, &out, &errb)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errb.String())
	}
	for _, want := range []string{
		"rt (IPLookup, source config)", "4 IPv4, 0 IPv6", "memory:",
		"10.16.1.1       -> 10.16.0.0/12: via 10.2.0.2 out 1",
		"10.1.0.9        -> 10.1.0.0/24: connected out 0",
		"2001:db8::1     -> dropped (no route)",
	} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("output lacks %q:\n%s", want, out.String())
		}
	}

	// -generate writes a table that loads back, with the routes it promised.
	out.Reset()
	if code := Main([]string{"routes", "-generate", "2000", "-generate6", "100", "-ecmp", "0.1", "-default", "-seed", "7"}, &out, &errb); code != 0 {
		t.Fatalf("generate: exit %d: %s", code, errb.String())
	}
	file := filepath.Join(t.TempDir(), "gen.routes")
	os.WriteFile(file, out.Bytes(), 0o644)
	rs, err := ip.ReadRoutesFile(file)
	if err != nil || len(rs) != 2102 {
		t.Fatalf("generated file: %d routes, %v", len(rs), err)
	}
	graph := filepath.Join(t.TempDir(), "g.toml")
	src, _ := os.ReadFile("../../configs/bench-l3.toml")
	s := strings.Replace(string(src), "[elements.rt]\ntype   = \"IPLookup\"\n", "[elements.rt]\ntype   = \"IPLookup\"\nroutes_file = \""+file+"\"\nmiss = 1\n", 1)
	s = strings.Replace(s, "routes = [", "unused = [", 1)
	s = s[:strings.Index(s, "unused = [")] + s[strings.Index(s, "]\n\n[graph]")+3:]
	os.WriteFile(graph, []byte(s), 0o644)
	out.Reset()
	errb.Reset()
	if code := Main([]string{"routes", "-config", graph, "10.1.0.1"}, &out, &errb); code != 0 {
		t.Fatalf("exit %d: %s", code, errb.String())
	}
	if !strings.Contains(out.String(), "2001 IPv4, 101 IPv6") {
		t.Errorf("generated table:\n%s", out.String())
	}

	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"routes", "-config", "../../configs/router.toml", "10.1.2"}, "not an IPv4 or IPv6 address"},
		{[]string{"routes", "-config", "../../configs/router.toml", "-element", "nope"}, "no IPLookup element named"},
	} {
		errb.Reset()
		if code := Main(tc.args, &out, &errb); code == 0 || !strings.Contains(errb.String(), tc.want) {
			t.Errorf("%v: exit %d, %q; want an error containing %q", tc.args, code, errb.String(), tc.want)
		}
	}
}
