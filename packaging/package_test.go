package packaging

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/junction-dataplane/junction/internal/netns"
)

// installedGraph is the contract graph the package installs in
// /etc/junction that this test checks and runs as installed, inside a
// network namespace holding the interfaces it names.
var installedGraph = struct {
	name       string
	interfaces []string
}{"site-router", []string{"lan0", "wan0"}}

// genGraph runs without interfaces: an installed example on the gen
// driver (synthetic traffic).
const genGraph = "/usr/share/doc/junction/examples/bench-l3.toml"

// buildDeb runs build-deb.sh into a temporary directory and returns the
// package's path.
func buildDeb(t *testing.T) string {
	t.Helper()
	out, err := exec.Command("./build-deb.sh", t.TempDir()).Output()
	if err != nil {
		var stderr []byte
		if ee, ok := err.(*exec.ExitError); ok {
			stderr = ee.Stderr
		}
		t.Fatalf("build-deb.sh: %v\n%s", err, stderr)
	}
	deb := strings.TrimSpace(string(out))
	if !strings.HasSuffix(deb, ".deb") {
		t.Fatalf("build-deb.sh printed %q, not a .deb path", out)
	}
	return deb
}

// newRoot is an empty root with an empty dpkg database: a fresh machine's
// or container's file system before the package.
func newRoot(t *testing.T) string {
	root := filepath.Join(t.TempDir(), "root")
	for _, d := range []string{"var/lib/dpkg/info", "var/lib/dpkg/updates", "proc", "sys", "run"} {
		if err := os.MkdirAll(filepath.Join(root, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(root, "var/lib/dpkg/status"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	return root
}

// dpkg runs dpkg on root. The maintainer scripts run outside it
// (chrootless: the root has no shell), told so by DPKG_ROOT.
func dpkg(t *testing.T, root string, args ...string) string {
	t.Helper()
	cmd := exec.Command("dpkg", append([]string{"--root=" + root, "--force-script-chrootless"}, args...)...)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("dpkg %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return string(out)
}

// inRoot is a command that runs argv chrooted into root as a container
// would: in a mount namespace of its own with /proc and /sys mounted
// (they vanish with it), in ns's network namespace (nil: this one).
func inRoot(ns *netns.NS, root string, argv ...string) *exec.Cmd {
	return inRootWith(ns, root, "", argv...)
}

// inRootWith is inRoot with only the capabilities caps (setpriv's list,
// "+net_admin,+net_raw"; "": all of root's) and no new privileges, as
// the unit's CapabilityBoundingSet and NoNewPrivileges leave the service.
// CAP_SYS_CHROOT is kept for the chroot itself.
func inRootWith(ns *netns.NS, root, caps string, argv ...string) *exec.Cmd {
	script := `mount -t proc proc "$0/proc" && mount -t sysfs sysfs "$0/sys" && exec chroot "$0" "$@"`
	if caps != "" {
		script = `mount -t proc proc "$0/proc" && mount -t sysfs sysfs "$0/sys" && exec setpriv --no-new-privs --bounding-set -all,` +
			caps + `,+sys_chroot --inh-caps -all chroot "$0" "$@"`
	}
	args := append([]string{"-m", "--propagation", "private", "sh", "-c", script, root}, argv...)
	if ns == nil {
		return exec.Command("unshare", args...)
	}
	return ns.Command("unshare", args...)
}

// unitCapabilities is the installed unit's CapabilityBoundingSet in
// setpriv's terms: "+net_admin,+net_raw,...".
func unitCapabilities(t *testing.T, root string) string {
	t.Helper()
	unit, err := os.ReadFile(filepath.Join(root, "usr/lib/systemd/system/junction@.service"))
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range strings.Split(string(unit), "\n") {
		if set, ok := strings.CutPrefix(l, "CapabilityBoundingSet="); ok {
			var caps []string
			for _, c := range strings.Fields(set) {
				caps = append(caps, "+"+strings.ToLower(strings.TrimPrefix(c, "CAP_")))
			}
			return strings.Join(caps, ",")
		}
	}
	t.Fatal("the unit has no CapabilityBoundingSet")
	return ""
}

func runIn(t *testing.T, ns *netns.NS, root string, argv ...string) string {
	t.Helper()
	out, err := inRoot(ns, root, argv...).CombinedOutput()
	if err != nil {
		t.Fatalf("%s: %v\n%s", strings.Join(argv, " "), err, out)
	}
	return string(out)
}

// TestDebianPackage builds the package, installs it with dpkg into an
// empty root and uses it there as an operator would without systemd: the
// files are where docs/install.md says, the contract graph passes check
// and runs as installed (its interfaces in a namespace), with all of
// root's capabilities and with only the unit's, a gen graph runs
// without any, a second forwarder on a live socket is refused, the unit
// passes systemd-analyze verify, and removing and purging clean up.
func TestDebianPackage(t *testing.T) {
	netns.SkipShort(t)
	if os.Geteuid() != 0 {
		t.Skip("needs root: dpkg --root installs as root, chroot and mount are root's")
	}
	for _, tool := range []string{"dpkg", "dpkg-deb", "unshare", "go"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("needs %s (Debian's dpkg, util-linux's unshare, Go): %v", tool, err)
		}
	}
	netns.RequireRoot(t)
	deb := buildDeb(t)

	// The package's files and metadata.
	info, err := exec.Command("dpkg-deb", "-f", deb, "Package", "Architecture", "Version").Output()
	if err != nil || !strings.Contains(string(info), "Package: junction\n") {
		t.Fatalf("dpkg-deb -f: %v: %s", err, info)
	}
	root := newRoot(t)
	t.Logf("%s", dpkg(t, root, "-i", deb))
	status := dpkg(t, root, "-s", "junction")
	if !strings.Contains(status, "Status: install ok installed") {
		t.Fatalf("dpkg -s junction:\n%s", status)
	}
	conf := "/etc/junction/" + installedGraph.name + ".toml"
	if !strings.Contains(status, "\n "+conf+" ") {
		t.Errorf("%s is not a conffile (an upgrade would overwrite the operator's edits):\n%s", conf, status)
	}
	for _, p := range []string{
		"usr/bin/forwarder",
		"usr/lib/systemd/system/junction@.service",
		strings.TrimPrefix(conf, "/"),
		strings.TrimPrefix(genGraph, "/"),
		"usr/share/doc/junction/install.md",
		"usr/share/man/man1/forwarder.1.gz",
		"usr/share/man/man1/forwarder-run.1.gz",
		"usr/share/man/man1/forwarder-completion.1.gz",
		"usr/share/bash-completion/completions/forwarder",
		"usr/share/zsh/vendor-completions/_forwarder",
		"usr/share/fish/vendor_completions.d/forwarder.fish",
	} {
		if fi, err := os.Stat(filepath.Join(root, p)); err != nil || fi.Size() == 0 {
			t.Errorf("/%s: not installed (%v)", p, err)
		}
	}
	if out, err := exec.Command("bash", "-n", filepath.Join(root, "usr/share/bash-completion/completions/forwarder")).CombinedOutput(); err != nil {
		t.Errorf("bash -n on the installed completion: %v\n%s", err, out)
	}
	if out, err := exec.Command("sh", "-c", `gzip -dc "$0" | head -c 3`, filepath.Join(root, "usr/share/man/man1/forwarder-run.1.gz")).Output(); err != nil || string(out) != `.\"` {
		t.Errorf("forwarder-run.1.gz is not a gzipped roff page: %v %q", err, out)
	}
	verifyUnit(t, root)

	// Without interfaces: the gen example checks and runs.
	if out := runIn(t, nil, root, "/usr/bin/forwarder", "check", "-config", genGraph); !strings.HasPrefix(out, "ok: ") {
		t.Errorf("installed check of %s: %s", genGraph, out)
	}
	if out := runIn(t, nil, root, "/usr/bin/forwarder", "run", "-config", genGraph, "-duration", "1s", "-nopin", "-stats", "off", "-quiet"); !strings.Contains(out, "stopped after") {
		t.Errorf("installed run of %s: %s", genGraph, out)
	}

	// The contract graph as installed, started the way the unit starts
	// it but without systemd, in a namespace holding its interfaces.
	env := netns.New(t)
	ns := env.NS("pkg")
	for _, ifname := range installedGraph.interfaces {
		env.Veth(ns, ifname, ns, ifname+"p", 1)
	}
	if out := runIn(t, ns, root, "/usr/bin/forwarder", "check", "-config", conf); !strings.HasPrefix(out, "ok: ") {
		t.Errorf("installed check of %s: %s", conf, out)
	}
	sock := "/run/junction/" + installedGraph.name + ".sock"
	out := runIn(t, ns, root, "/usr/bin/forwarder", "run", "-config", conf, "-control", sock, "-duration", "1s", "-stats", "off")
	if !strings.Contains(out, "junction: "+conf+" (generation 1)") || !strings.Contains(out, "control at "+sock) || !strings.Contains(out, "stopped after") {
		t.Errorf("installed run of %s:\n%s", conf, out)
	}

	// With only the unit's capabilities it runs too (AF_XDP sockets, XDP
	// and TC programs, BPF maps, UMEM); with fewer it is refused, saying
	// what it lacks (so this check can tell).
	if _, err := exec.LookPath("setpriv"); err != nil {
		t.Log("setpriv (util-linux) not installed: the unit's capability set is not tried")
	} else {
		caps := unitCapabilities(t, root)
		out, err := inRootWith(ns, root, caps, "/usr/bin/forwarder", "run", "-config", conf, "-control", sock, "-duration", "1s", "-stats", "off").CombinedOutput()
		if err != nil || !strings.Contains(string(out), "stopped after") {
			t.Errorf("run of %s with only the unit's capabilities (%s): %v\n%s", conf, caps, err, out)
		}
		out, err = inRootWith(ns, root, "+net_admin,+ipc_lock", "/usr/bin/forwarder", "run", "-config", conf, "-control", sock, "-duration", "1s", "-stats", "off").CombinedOutput()
		if err == nil || !strings.Contains(string(out), "permission denied") {
			t.Errorf("run of %s without CAP_NET_RAW and CAP_BPF: %v\n%s", conf, err, out)
		}
	}

	startedTwice(t, root)

	// Removal keeps the operator's graphs; purge removes them.
	dpkg(t, root, "-r", "junction")
	if _, err := os.Stat(filepath.Join(root, "usr/bin/forwarder")); err == nil {
		t.Error("dpkg -r left /usr/bin/forwarder")
	}
	if _, err := os.Stat(filepath.Join(root, conf)); err != nil {
		t.Errorf("dpkg -r removed the conffile %s: %v", conf, err)
	}
	dpkg(t, root, "-P", "junction")
	if _, err := os.Stat(filepath.Join(root, conf)); err == nil {
		t.Errorf("dpkg -P left %s", conf)
	}
}

// startedTwice: a forwarder started on the socket a running one serves
// (the service's graph started again by hand) is refused, exit status 1,
// naming the socket and the process holding it; the first runs on.
func startedTwice(t *testing.T, root string) {
	t.Helper()
	sock := "/run/junction/twice.sock"
	first := inRoot(nil, root, "/usr/bin/forwarder", "run", "-config", genGraph, "-control", sock, "-duration", "30s", "-nopin", "-stats", "off", "-quiet")
	var firstOut strings.Builder
	first.Stdout, first.Stderr = &firstOut, &firstOut
	if err := first.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() {
		first.Process.Signal(os.Interrupt)
		first.Wait()
		if t.Failed() {
			t.Logf("first forwarder:\n%s", firstOut.String())
		}
	}()
	// The socket is up once its file is (the forwarder creates it
	// listening).
	deadline := time.Now().Add(20 * time.Second)
	for {
		if fi, err := os.Stat(filepath.Join(root, sock)); err == nil && fi.Mode()&os.ModeSocket != 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the first forwarder's control socket did not appear")
		}
		time.Sleep(50 * time.Millisecond)
	}
	out, err := inRoot(nil, root, "/usr/bin/forwarder", "run", "-config", genGraph, "-control", sock, "-duration", "1s", "-nopin", "-stats", "off").CombinedOutput()
	ee, _ := err.(*exec.ExitError)
	if ee == nil || ee.ExitCode() != 1 || !strings.Contains(string(out), "control socket "+sock+": forwarder process ") || !strings.Contains(string(out), "is serving it") {
		t.Errorf("second forwarder on %s: %v\n%s", sock, err, out)
	}
	if strings.Contains(string(out), "stopped after") {
		t.Errorf("the second forwarder ran its graph before refusing:\n%s", out)
	}
	// The first one is unharmed: it still answers on its socket.
	if out := runIn(t, nil, root, "/usr/bin/forwarder", "show", "-control", sock, "runtime"); !strings.Contains(out, "FromDevice") {
		t.Errorf("show runtime on the first forwarder after the refusal:\n%s", out)
	}
}

// verifyUnit runs systemd-analyze verify on the installed unit, as an
// instance, with its ExecStart pointing at the installed binary (verify
// checks that the command exists). Any complaint fails: verify itself
// exits 0 on an unknown key.
func verifyUnit(t *testing.T, root string) {
	t.Helper()
	if _, err := exec.LookPath("systemd-analyze"); err != nil {
		t.Log("systemd-analyze not installed: the unit is not verified")
		return
	}
	unit, err := os.ReadFile(filepath.Join(root, "usr/lib/systemd/system/junction@.service"))
	if err != nil {
		t.Fatal(err)
	}
	text := strings.ReplaceAll(string(unit), "/usr/bin/forwarder", filepath.Join(root, "usr/bin/forwarder"))
	inst := filepath.Join(t.TempDir(), "junction@"+installedGraph.name+".service")
	if err := os.WriteFile(inst, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command("systemd-analyze", "verify", "--man=no", inst).CombinedOutput()
	if err != nil || len(strings.TrimSpace(string(out))) > 0 {
		t.Errorf("systemd-analyze verify junction@.service: %v\n%s", err, out)
	}
}
