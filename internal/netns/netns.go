package netns

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// RequireRoot skips the test unless it runs as root on Linux with the ip
// tool (iproute2) installed, and without -short: namespace tests take
// seconds, and -short is the quick run, even as root.
func RequireRoot(t testing.TB) {
	t.Helper()
	SkipShort(t)
	if runtime.GOOS != "linux" {
		t.Skip("netns: needs Linux")
	}
	if os.Geteuid() != 0 {
		t.Skip("netns: needs root")
	}
	RequireTool(t, "ip")
}

// RequireTool skips the test when the named executable is not in PATH.
func RequireTool(t testing.TB, tool string) {
	t.Helper()
	if _, err := exec.LookPath(tool); err != nil {
		t.Skipf("netns: %s not installed", tool)
	}
}

// processTag is unique per test binary run: 3 random bytes, so two
// concurrent `go test` processes never share names.
var processTag = func() string {
	var b [3]byte
	if _, err := rand.Read(b[:]); err != nil {
		return fmt.Sprintf("%06x", os.Getpid()&0xffffff)
	}
	return hex.EncodeToString(b[:])
}()

var seq atomic.Uint32

// Env owns the namespaces, links and processes of one test.
type Env struct {
	t     testing.TB
	mu    sync.Mutex
	nss   []*NS
	links []string // root-namespace links to delete
	procs []*Proc
}

// New returns an empty environment whose contents are removed when the
// test ends (t.Cleanup), whether it passed or not. Call RequireRoot first.
func New(t testing.TB) *Env {
	t.Helper()
	SkipShort(t)
	e := &Env{t: t}
	t.Cleanup(e.Cleanup)
	return e
}

// Unique returns base followed by a suffix unique to this process and
// call, e.g. "v" → "v3fa2c107". Keep base short: interface names are
// limited to 15 bytes (it fails the test when the result is longer).
func (e *Env) Unique(base string) string {
	e.t.Helper()
	s := fmt.Sprintf("%s%s%02x", base, processTag, seq.Add(1)&0xff)
	if len(s) > 15 {
		e.t.Fatalf("netns: name %q longer than 15 bytes", s)
	}
	return s
}

// NS is one network namespace.
type NS struct {
	// Name is the namespace's name as `ip netns` knows it.
	Name string
	env  *Env
}

// NS creates a namespace named "jn-<base>-<unique suffix>" with its
// loopback up.
func (e *Env) NS(base string) *NS {
	e.t.Helper()
	name := fmt.Sprintf("jn-%s-%s%d", base, processTag, seq.Add(1))
	if out, err := exec.Command("ip", "netns", "add", name).CombinedOutput(); err != nil {
		e.t.Fatalf("netns: ip netns add %s: %v: %s", name, err, out)
	}
	ns := &NS{Name: name, env: e}
	e.mu.Lock()
	e.nss = append(e.nss, ns)
	e.mu.Unlock()
	ns.Up("lo")
	return ns
}

// Path is the namespace's bind-mount file (/run/netns/NAME), for setns.
func (ns *NS) Path() string { return filepath.Join("/run/netns", ns.Name) }

// Veth creates a veth pair: interface aName in namespace a and bName in
// namespace b (a nil namespace means the root namespace: then the name must
// come from Unique). queues ≥ 1 sets both numrxqueues and numtxqueues of
// both ends. Both ends are set up.
func (e *Env) Veth(a *NS, aName string, b *NS, bName string, queues int) {
	e.t.Helper()
	if queues < 1 {
		queues = 1
	}
	q := fmt.Sprint(queues)
	args := []string{"link", "add", aName}
	if a != nil {
		args = append(args, "netns", a.Name)
	}
	args = append(args, "numtxqueues", q, "numrxqueues", q, "type", "veth", "peer", "name", bName)
	if b != nil {
		args = append(args, "netns", b.Name)
	}
	args = append(args, "numtxqueues", q, "numrxqueues", q)
	if out, err := exec.Command("ip", args...).CombinedOutput(); err != nil {
		e.t.Fatalf("netns: ip %s: %v: %s", strings.Join(args, " "), err, out)
	}
	e.mu.Lock()
	if a == nil {
		e.links = append(e.links, aName)
	} else if b == nil {
		e.links = append(e.links, bName)
	}
	e.mu.Unlock()
	e.ns(a).Up(aName)
	e.ns(b).Up(bName)
}

// ns maps nil to a root-namespace handle.
func (e *Env) ns(n *NS) *NS {
	if n == nil {
		return &NS{env: e}
	}
	return n
}

// Root returns a handle on the root namespace (Run, Up, Addr work on it;
// it is never deleted).
func (e *Env) Root() *NS { return &NS{env: e} }

// command builds the exec.Cmd running name inside the namespace.
func (ns *NS) command(ctx context.Context, name string, args ...string) *exec.Cmd {
	if ns.Name == "" {
		return exec.CommandContext(ctx, name, args...)
	}
	return exec.CommandContext(ctx, "ip", append([]string{"netns", "exec", ns.Name, name}, args...)...)
}

// Command returns an unstarted command running name inside the namespace
// (through `ip netns exec`, which execs it: the process id is the
// command's). The caller owns it: prefer Start, which the cleanup kills.
func (ns *NS) Command(name string, args ...string) *exec.Cmd {
	return ns.command(context.Background(), name, args...)
}

// Run runs a command inside the namespace, waits at most 60 s, and returns
// its combined output.
func (ns *NS) Run(name string, args ...string) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	out, err := ns.command(ctx, name, args...).CombinedOutput()
	if err != nil {
		return string(out), fmt.Errorf("%s %s (netns %s): %w: %s", name, strings.Join(args, " "), ns.Name, err, bytes.TrimSpace(out))
	}
	return string(out), nil
}

// MustRun is Run that fails the test on error.
func (ns *NS) MustRun(name string, args ...string) string {
	ns.env.t.Helper()
	out, err := ns.Run(name, args...)
	if err != nil {
		ns.env.t.Fatal(err)
	}
	return out
}

// Up sets an interface up.
func (ns *NS) Up(ifname string) {
	ns.env.t.Helper()
	ns.MustRun("ip", "link", "set", "dev", ifname, "up")
}

// Addr adds an address ("10.1.0.1/24") to an interface.
func (ns *NS) Addr(ifname, cidr string) {
	ns.env.t.Helper()
	ns.MustRun("ip", "addr", "add", cidr, "dev", ifname)
}

// SetMAC sets an interface's MAC address ("02:00:00:00:00:01").
func (ns *NS) SetMAC(ifname, mac string) {
	ns.env.t.Helper()
	ns.MustRun("ip", "link", "set", "dev", ifname, "address", mac)
}

// MAC returns an interface's MAC address.
func (ns *NS) MAC(ifname string) net.HardwareAddr {
	ns.env.t.Helper()
	out := ns.MustRun("ip", "-o", "link", "show", "dev", ifname)
	f := strings.Fields(out)
	for i := 0; i+1 < len(f); i++ {
		if f[i] == "link/ether" {
			if hw, err := net.ParseMAC(f[i+1]); err == nil {
				return hw
			}
		}
	}
	ns.env.t.Fatalf("netns: no MAC for %s in %q", ifname, out)
	return nil
}

// Sysctl sets a sysctl inside the namespace, e.g.
// Sysctl("net.ipv4.ip_forward", "1") (the namespace's own /proc/sys/net).
func (ns *NS) Sysctl(key, value string) {
	ns.env.t.Helper()
	path := "/proc/sys/" + strings.ReplaceAll(key, ".", "/")
	ns.MustRun("sh", "-c", "echo "+value+" > "+path)
}

// Route adds a route: Route("10.16.0.0/12", "via", "10.2.0.1").
func (ns *NS) Route(args ...string) {
	ns.env.t.Helper()
	ns.MustRun("ip", append([]string{"route", "add"}, args...)...)
}

// Do runs fn on an OS thread that has joined the namespace and returns its
// error. See the package doc for what is and is not inside the namespace.
func (ns *NS) Do(fn func() error) error {
	errc := make(chan error, 1)
	go func() {
		runtime.LockOSThread()
		orig, err := os.Open("/proc/thread-self/ns/net")
		if err != nil {
			runtime.UnlockOSThread()
			errc <- fmt.Errorf("netns: %w", err)
			return
		}
		defer orig.Close()
		target, err := os.Open(ns.Path())
		if err != nil {
			runtime.UnlockOSThread()
			errc <- fmt.Errorf("netns: %w", err)
			return
		}
		err = unix.Setns(int(target.Fd()), unix.CLONE_NEWNET)
		target.Close()
		if err != nil {
			runtime.UnlockOSThread()
			errc <- fmt.Errorf("netns: setns %s: %w", ns.Name, err)
			return
		}
		var ferr error
		func() {
			defer func() {
				if r := recover(); r != nil {
					ferr = fmt.Errorf("netns: panic in Do: %v", r)
				}
			}()
			ferr = fn()
		}()
		if err := unix.Setns(int(orig.Fd()), unix.CLONE_NEWNET); err != nil {
			// Leave the thread locked: it exits with the goroutine
			// instead of carrying the namespace to other goroutines.
			errc <- ferr
			return
		}
		runtime.UnlockOSThread()
		errc <- ferr
	}()
	return <-errc
}

// Proc is a background process started in a namespace.
type Proc struct {
	Cmd  *exec.Cmd
	out  syncBuffer
	done chan struct{}
	err  error
}

// Start starts a command in the namespace with its stdout and stderr
// captured (Output); the environment's cleanup kills it if still running.
func (ns *NS) Start(name string, args ...string) *Proc {
	ns.env.t.Helper()
	return ns.StartCmd(ns.Command(name, args...))
}

// StartCmd is Start for a command from Command that the caller has
// adjusted (Env, Dir, ExtraFiles); Stdout, Stderr and SysProcAttr are set
// here.
func (ns *NS) StartCmd(cmd *exec.Cmd) *Proc {
	ns.env.t.Helper()
	name := cmd.Path
	p := &Proc{Cmd: cmd, done: make(chan struct{})}
	p.Cmd.Stdout = &p.out
	p.Cmd.Stderr = &p.out
	// Its own process group, so a terminal's ^C reaches only the test.
	p.Cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	// Grandchildren holding the output pipe must not block Wait forever.
	p.Cmd.WaitDelay = 2 * time.Second
	if err := p.Cmd.Start(); err != nil {
		ns.env.t.Fatalf("netns: start %s in %s: %v", name, ns.Name, err)
	}
	go func() {
		p.err = p.Cmd.Wait()
		close(p.done)
	}()
	ns.env.mu.Lock()
	ns.env.procs = append(ns.env.procs, p)
	ns.env.mu.Unlock()
	return p
}

// Done is closed when the process has exited.
func (p *Proc) Done() <-chan struct{} { return p.done }

// Wait waits up to timeout for the process to exit and returns its exit
// error (an error also when it is still running).
func (p *Proc) Wait(timeout time.Duration) error {
	select {
	case <-p.done:
		return p.err
	case <-time.After(timeout):
		return fmt.Errorf("netns: %s still running after %v", p.Cmd.Path, timeout)
	}
}

// Signal sends a signal to the process (no-op once it has exited).
func (p *Proc) Signal(sig os.Signal) error {
	select {
	case <-p.done:
		return nil
	default:
	}
	return p.Cmd.Process.Signal(sig)
}

// Kill SIGKILLs the process and its process group (children it started)
// and waits for it to exit.
func (p *Proc) Kill() {
	select {
	case <-p.done:
	default:
		_ = syscall.Kill(-p.Cmd.Process.Pid, syscall.SIGKILL)
		_ = p.Cmd.Process.Kill()
	}
	<-p.done
}

// Output returns what the process has written so far.
func (p *Proc) Output() string { return p.out.String() }

// Cleanup kills started processes, deletes root-namespace links and the
// namespaces. New registers it with t.Cleanup; calling it twice is safe.
func (e *Env) Cleanup() {
	e.mu.Lock()
	procs, links, nss := e.procs, e.links, e.nss
	e.procs, e.links, e.nss = nil, nil, nil
	e.mu.Unlock()
	for _, p := range procs {
		p.Kill()
	}
	for _, l := range links {
		// Deleting one end of a veth deletes both; an error means it is
		// already gone with its peer's namespace.
		_ = exec.Command("ip", "link", "del", "dev", l).Run()
	}
	for i := len(nss) - 1; i >= 0; i-- {
		if out, err := exec.Command("ip", "netns", "del", nss[i].Name).CombinedOutput(); err != nil {
			e.t.Logf("netns: ip netns del %s: %v: %s", nss[i].Name, err, out)
		}
	}
}

// syncBuffer is a bytes.Buffer safe for the process's writers and readers.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// SkipShort skips a test that needs network namespaces when -short is
// given.
func SkipShort(t testing.TB) {
	t.Helper()
	if testing.Short() {
		t.Skip("netns: needs network namespaces (skipped with -short)")
	}
}
