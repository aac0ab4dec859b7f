package control

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

func start(t *testing.T, dir string) (*Server, string) {
	t.Helper()
	s := NewServer()
	s.Handle("echo", func(ctx context.Context, args []string) (any, error) { return args, nil })
	s.Handle("bad", func(ctx context.Context, args []string) (any, error) { return nil, Usagef("bad: %q", args) })
	s.Handle("fail", func(ctx context.Context, args []string) (any, error) { return nil, errors.New("it failed") })
	s.Handle("wait", func(ctx context.Context, args []string) (any, error) {
		<-ctx.Done()
		return nil, ctx.Err()
	})
	path := filepath.Join(dir, "sub", "x.sock")
	if err := s.Listen(path); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s, path
}

func TestCallAndErrors(t *testing.T) {
	_, path := start(t, t.TempDir())
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if m := fi.Mode().Perm(); m != 0o600 {
		t.Errorf("socket mode %o, want 600", m)
	}
	ctx := context.Background()
	data, err := Call(ctx, path, "echo", []string{"a", "b c"})
	if err != nil || string(data) != `["a","b c"]` {
		t.Errorf("echo: %s, %v", data, err)
	}
	if _, err := Call(ctx, path, "bad", []string{"x"}); err == nil || !IsUsage(err) || !strings.Contains(err.Error(), `bad: ["x"]`) {
		t.Errorf("bad: %v (usage %v)", err, IsUsage(err))
	}
	if _, err := Call(ctx, path, "fail", nil); err == nil || IsUsage(err) || err.Error() != "it failed" {
		t.Errorf("fail: %v", err)
	}
	_, err = Call(ctx, path, "ehco", nil)
	if err == nil || !IsUsage(err) || !strings.Contains(err.Error(), `unknown command "ehco"`) || !strings.Contains(err.Error(), "echo") {
		t.Errorf("unknown command: %v", err)
	}
	if _, err := Call(ctx, filepath.Join(t.TempDir(), "none.sock"), "echo", nil); err == nil || !strings.Contains(err.Error(), "no forwarder at") {
		t.Errorf("missing socket: %v", err)
	}
}

// A client that goes away cancels its command's context.
func TestHangupCancels(t *testing.T) {
	_, path := start(t, t.TempDir())
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	t0 := time.Now()
	if _, err := Call(ctx, path, "wait", nil); err == nil {
		t.Fatal("wait returned without error")
	}
	if d := time.Since(t0); d > 5*time.Second {
		t.Errorf("call took %v", d)
	}
}

// A second server on a live socket is refused; a stale socket file is
// replaced.
func TestLiveAndStaleSocket(t *testing.T) {
	dir := t.TempDir()
	_, path := start(t, dir)
	s2 := NewServer()
	if err := s2.Listen(path); err == nil || !strings.Contains(err.Error(), "another forwarder") {
		t.Errorf("second Listen: %v", err)
	}
	stale := filepath.Join(dir, "stale.sock")
	fd, err := syscall.Socket(syscall.AF_UNIX, syscall.SOCK_STREAM, 0)
	if err != nil {
		t.Fatal(err)
	}
	if err := syscall.Bind(fd, &syscall.SockaddrUnix{Name: stale}); err != nil {
		t.Fatal(err)
	}
	syscall.Close(fd) // bound, never listened: nobody answers
	s3 := NewServer()
	if err := s3.Listen(stale); err != nil {
		t.Fatalf("stale socket not replaced: %v", err)
	}
	s3.Close()
	if _, err := os.Stat(stale); !os.IsNotExist(err) {
		t.Errorf("socket left after Close: %v", err)
	}
}

// TestPeerNotRoot runs a client as another uid: with the socket's 0600
// mode it cannot connect; with the mode opened up, the server's peer
// credential check refuses it.
func TestPeerNotRoot(t *testing.T) {
	if os.Getenv("CONTROL_TEST_CLIENT") != "" {
		_, err := Call(context.Background(), os.Getenv("CONTROL_TEST_CLIENT"), "echo", []string{"hi"})
		if err != nil {
			os.Stdout.WriteString("ERR " + err.Error())
		} else {
			os.Stdout.WriteString("OK")
		}
		os.Exit(0)
	}
	if os.Getuid() != 0 {
		t.Skip("needs root (to run a client as another uid)")
	}
	dir, err := os.MkdirTemp("/tmp", "ctltest")
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(dir)
	os.Chmod(dir, 0o755)
	_, path := start(t, dir)
	// The test binary's own directory is private to root: run a copy.
	bin := filepath.Join(dir, "client.test")
	self, err := os.ReadFile(os.Args[0])
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(bin, self, 0o755); err != nil {
		t.Fatal(err)
	}
	client := func() string {
		cmd := exec.Command(bin, "-test.run=^TestPeerNotRoot$")
		cmd.Dir = dir
		cmd.Env = append(os.Environ(), "CONTROL_TEST_CLIENT="+path)
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 65534, Gid: 65534}}
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("client: %v: %s", err, out)
		}
		return string(out)
	}
	if out := client(); !strings.Contains(out, "ERR") || !strings.Contains(out, "permission denied") {
		t.Errorf("uid 65534 through mode 0600: %q", out)
	}
	if err := os.Chmod(path, 0o666); err != nil {
		t.Fatal(err)
	}
	out := client()
	if !strings.Contains(out, "ERR control: permission denied: uid 65534") {
		t.Errorf("uid 65534 with the mode opened: %q", out)
	}
	// Root still gets in.
	if _, err := Call(context.Background(), path, "echo", nil); err != nil {
		t.Errorf("root: %v", err)
	}
}

func TestDefaultPath(t *testing.T) {
	for in, want := range map[string]string{
		"":                         "/run/junction/default.sock",
		"configs/nat-gateway.toml": "/run/junction/nat-gateway.sock",
		"/etc/r.1.toml":            "/run/junction/r.1.sock",
	} {
		if got := DefaultPath(in); got != want {
			t.Errorf("DefaultPath(%q) = %q, want %q", in, got, want)
		}
	}
}
