package host

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"log"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/hashicorp/go-hclog"
	plugin "github.com/hashicorp/go-plugin"
	"golang.org/x/sys/unix"

	"github.com/junction-dataplane/junction/elements"
	"github.com/junction-dataplane/junction/plugins/internal/wire"
)

var (
	logMu  sync.Mutex
	logger = log.New(os.Stderr, "", log.LstdFlags)
)

// SetLog sends the host's log (plugin failures, restarts, plugin stderr) to
// w; the default is standard error.
func SetLog(w io.Writer) {
	logMu.Lock()
	logger = log.New(w, "", log.LstdFlags)
	logMu.Unlock()
}

func logf(format string, args ...any) {
	logMu.Lock()
	l := logger
	logMu.Unlock()
	l.Printf(format, args...)
}

// StartTimeout bounds a plugin's start (exec to handshake).
var StartTimeout = 10 * time.Second

// resolvePath finds the executable and refuses one that others could have
// replaced: a world-writable file, or a file in a world-writable directory
// without the sticky bit.
func resolvePath(p string) (string, error) {
	if p == "" {
		return "", errors.New("required: the plugin executable")
	}
	if !strings.ContainsRune(p, '/') {
		lp, err := exec.LookPath(p)
		if err != nil {
			return "", fmt.Errorf("%q: not found in $PATH (write ./%s for a file in the current directory)", p, p)
		}
		p = lp
	}
	abs, err := filepath.Abs(p)
	if err != nil {
		return "", err
	}
	fi, err := os.Stat(abs)
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return "", fmt.Errorf("%s: no such file (build the plugin first, e.g. go build -o %s ./path/to/plugin)", p, p)
		}
		return "", err
	}
	if !fi.Mode().IsRegular() {
		return "", fmt.Errorf("%s: not a regular file", p)
	}
	if fi.Mode().Perm()&0o111 == 0 {
		return "", fmt.Errorf("%s: not executable", p)
	}
	if fi.Mode().Perm()&0o002 != 0 {
		return "", fmt.Errorf("%s: refused: the file is world-writable (mode %v): anyone could replace the code the forwarder runs", p, fi.Mode().Perm())
	}
	dir := filepath.Dir(abs)
	if di, err := os.Stat(dir); err == nil && di.Mode().Perm()&0o002 != 0 && di.Mode()&os.ModeSticky == 0 {
		return "", fmt.Errorf("%s: refused: its directory %s is world-writable (mode %v): anyone could replace the plugin", p, dir, di.Mode().Perm())
	}
	return abs, nil
}

// fileSHA256 hashes the executable (for the sha256 mismatch message).
func fileSHA256(path string) string {
	f, err := os.Open(path)
	if err != nil {
		return "?"
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return "?"
	}
	return hex.EncodeToString(h.Sum(nil))
}

// proc is one running plugin process.
type proc struct {
	path   string
	client *plugin.Client
	rpc    *wire.Client
	pid    int
	pidfd  int
	exited chan struct{} // closed when the process has exited
	stderr *lineLogger
}

// launch starts the plugin at path (already resolved) and completes the
// handshake. extra are handed to it as fds 3, 4, 5 (the region and the
// doorbells) when it is started for traffic.
func launch(path, sum, label string, extra []*os.File) (*proc, error) {
	cmd := exec.Command(path)
	cmd.ExtraFiles = extra
	var sc *plugin.SecureConfig
	if sum != "" {
		want, _ := hex.DecodeString(sum)
		sc = &plugin.SecureConfig{Checksum: want, Hash: sha256.New()}
	}
	ll := &lineLogger{prefix: label + ": "}
	client := plugin.NewClient(&plugin.ClientConfig{
		HandshakeConfig:  wire.Handshake,
		Plugins:          plugin.PluginSet{wire.PluginName: &wire.GRPCPlugin{}},
		Cmd:              cmd,
		SecureConfig:     sc,
		AllowedProtocols: []plugin.Protocol{plugin.ProtocolGRPC},
		Logger:           hclog.New(&hclog.LoggerOptions{Level: hclog.Off, Output: io.Discard}),
		Stderr:           ll,
		StartTimeout:     StartTimeout,
	})
	cp, err := client.Client()
	if err != nil {
		client.Kill()
		return nil, handshakeError(err, path, sum)
	}
	raw, err := cp.Dispense(wire.PluginName)
	if err != nil {
		client.Kill()
		return nil, elements.Errorf("path", "%s: not a Junction element plugin: %v", path, err)
	}
	rpc, ok := raw.(*wire.Client)
	if !ok {
		client.Kill()
		return nil, elements.Errorf("path", "%s: not a Junction element plugin", path)
	}
	p := &proc{path: path, client: client, rpc: rpc, exited: make(chan struct{}), stderr: ll, pidfd: -1}
	if cmd.Process != nil {
		p.pid = cmd.Process.Pid
		if fd, err := unix.PidfdOpen(p.pid, 0); err == nil {
			p.pidfd = fd
		}
	}
	go p.watch()
	return p, nil
}

// watch closes p.exited when the process exits.
func (p *proc) watch() {
	defer close(p.exited)
	if p.pidfd < 0 {
		for !p.client.Exited() {
			time.Sleep(10 * time.Millisecond)
		}
		return
	}
	fds := []unix.PollFd{{Fd: int32(p.pidfd), Events: unix.POLLIN}}
	for {
		n, err := unix.Poll(fds, -1)
		if err == unix.EINTR {
			continue
		}
		if n > 0 || err != nil {
			return
		}
	}
}

// kill ends the process at once (SIGKILL: a plugin being replaced may be
// stuck in Process) and releases the client.
func (p *proc) kill() {
	if p.pid > 0 {
		if p.pidfd >= 0 {
			unix.PidfdSendSignal(p.pidfd, unix.SIGKILL, nil, 0)
		} else {
			unix.Kill(p.pid, unix.SIGKILL)
		}
	}
	<-p.exited
	p.client.Kill()
	if p.pidfd >= 0 {
		unix.Close(p.pidfd)
		p.pidfd = -1
	}
	p.stderr.flush()
}

func ctxTimeout() (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.Background(), StartTimeout)
}

// handshakeError turns go-plugin's start errors into what a user can act on.
func handshakeError(err error, path, sum string) error {
	msg := err.Error()
	switch {
	case errors.Is(err, plugin.ErrChecksumsDoNotMatch):
		return elements.Errorf("sha256", "%s has SHA-256 %s, the graph pins %s: refusing to start it", path, fileSHA256(path), sum)
	case strings.Contains(msg, "incompatible API version"):
		return elements.Errorf("path", "%s: wrong plugin protocol version (this forwarder speaks version %d): rebuild the plugin against this forwarder's plugins/sdk (%s)",
			path, wire.ProtocolVersion, firstLine(msg))
	case strings.Contains(msg, "Unrecognized remote plugin message"),
		strings.Contains(msg, "plugin exited before we could connect"),
		strings.Contains(msg, "timeout while waiting for plugin to start"),
		strings.Contains(msg, "exec format error"):
		return elements.Errorf("path", "%s: not a Junction plugin: it did not answer the go-plugin handshake (%s)", path, firstLine(msg))
	}
	return elements.Errorf("path", "%s: cannot start plugin: %s", path, firstLine(msg))
}

func firstLine(s string) string {
	s, _, _ = strings.Cut(s, "\n")
	return strings.TrimSpace(s)
}

// lineLogger logs a plugin's standard error line by line (a panic's stack
// trace included), keeping the last lines for failure messages.
type lineLogger struct {
	mu     sync.Mutex
	prefix string
	buf    []byte
}

func (l *lineLogger) Write(b []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.buf = append(l.buf, b...)
	for {
		i := strings.IndexByte(string(l.buf), '\n')
		if i < 0 {
			break
		}
		if line := strings.TrimRight(string(l.buf[:i]), "\r"); line != "" {
			logf("%s%s", l.prefix, line)
		}
		l.buf = l.buf[i+1:]
	}
	return len(b), nil
}

func (l *lineLogger) flush() {
	l.mu.Lock()
	defer l.mu.Unlock()
	if len(l.buf) > 0 {
		logf("%s%s", l.prefix, l.buf)
		l.buf = nil
	}
}
