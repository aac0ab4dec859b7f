package host

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/hashicorp/go-hclog"
	plugin "github.com/hashicorp/go-plugin"
	"github.com/hashicorp/go-plugin/runner"

	"google.golang.org/grpc"
	"google.golang.org/grpc/backoff"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

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

// Deadlines of a plugin's life outside the data path. Each is enforced by
// the host, whatever the plugin or anything it forked does: on expiry the
// plugin's whole process group is killed and its pipes are closed. Tests
// shorten them.
var (
	// StartTimeout bounds a start: exec, the go-plugin handshake, and the
	// connection to the plugin.
	StartTimeout = 10 * time.Second
	// CallTimeout bounds each control call: describe, validate, open.
	CallTimeout = 10 * time.Second
	// StopTimeout bounds a stop: after SIGKILL to the process group, how
	// long the host waits for the process to exit and for go-plugin to
	// release it before it gives up waiting (and logs so).
	StopTimeout = 2 * time.Second
)

// fdExecutable is the plugin's descriptor of its own executable, after
// the region and the doorbells (wire.FDRegion, FDReqBell, FDRespBel).
const fdExecutable = wire.FDRespBel + 1

// afterCheck, if set (by tests), runs between the checks (and the hash)
// and the exec.
var afterCheck func(real string)

// drainGrace is how long a stop waits for what the plugin already wrote
// (a panic's stack trace) before it closes the pipes.
const drainGrace = 200 * time.Millisecond

// proc is one running plugin process.
type proc struct {
	path   string
	label  string
	client *plugin.Client
	r      *groupRunner
	rpc    *wire.Client
	pid    int
	pidfd  int
	exited chan struct{} // closed when the process has exited
	stderr *lineLogger
	// stopTimeout is StopTimeout when the process was started (a stop may
	// run in the background, after the variable has changed).
	stopTimeout time.Duration
}

// errAborted: a start abandoned because its context ended (the element is
// closing) rather than because of the plugin.
var errAborted = errors.New("start abandoned: the element is closing")

// launch checks the executable at path (permissions of the file and of
// every directory above it, and the SHA-256 pin), starts it and completes
// the handshake, all within StartTimeout; ending ctx abandons the start at
// once. extra are handed to it as fds 3, 4, 5 (the region and the
// doorbells) when it is started for traffic.
func launch(ctx context.Context, path, sum, label string, extra []*os.File) (*proc, error) {
	real, checked, err := checkExecutable(path)
	if err != nil {
		return nil, elements.Errorf("path", "%v", err)
	}
	exe, err := openExecutable(real, checked)
	if err != nil {
		return nil, elements.Errorf("path", "%v", err)
	}
	// The child has its own copy once started; ours goes with launch.
	defer exe.Close()
	if sum != "" {
		got, err := fileSHA256(exe)
		if err != nil {
			return nil, elements.Errorf("path", "%v", err)
		}
		if got != sum {
			return nil, elements.Errorf("sha256", "%s has SHA-256 %s, the graph pins %s: refusing to start it", path, got, sum)
		}
	}
	if afterCheck != nil {
		afterCheck(real)
	}
	// The plugin is executed through the descriptor opened and checked
	// above, inherited as fdExecutable (a script's interpreter reopens it
	// by that name too), so what runs is what was checked and hashed.
	files := make([]*os.File, fdExecutable-3+1)
	copy(files, extra)
	files[fdExecutable-3] = exe
	r := newGroupRunner()
	ll := &lineLogger{prefix: label + ": "}
	client := plugin.NewClient(&plugin.ClientConfig{
		HandshakeConfig: wire.Handshake,
		Plugins:         plugin.PluginSet{wire.PluginName: &wire.GRPCPlugin{}},
		RunnerFunc: func(_ hclog.Logger, spec *exec.Cmd, _ string) (runner.Runner, error) {
			cmd := exec.Command("/proc/self/fd/" + strconv.Itoa(fdExecutable))
			cmd.Args[0] = real
			cmd.Env = spec.Env // the host's plus go-plugin's (cookie, socket dir)
			cmd.ExtraFiles = files
			r.cmd = cmd
			return r, nil
		},
		AllowedProtocols: []plugin.Protocol{plugin.ProtocolGRPC},
		Logger:           hclog.New(&hclog.LoggerOptions{Level: hclog.Off, Output: io.Discard}),
		Stderr:           ll,
		StartTimeout:     StartTimeout,
		GRPCDialOptions: []grpc.DialOption{grpc.WithConnectParams(grpc.ConnectParams{
			Backoff: backoff.DefaultConfig, MinConnectTimeout: StartTimeout,
		})},
	})
	p := &proc{path: path, label: label, client: client, r: r, exited: r.exited, stderr: ll, pidfd: -1, stopTimeout: StopTimeout}

	// go-plugin's Client holds a lock while it connects, and the
	// goroutine that would notice the process's death needs that lock: a
	// plugin whose socket accepts and never answers would hold the start
	// for gRPC's connect timeout whatever is killed. So the handshake runs
	// apart, and on the deadline it is abandoned (its process group killed,
	// its pipes closed) and released in the background once go-plugin lets
	// go, which the connect parameters below bound to StartTimeout.
	type result struct {
		raw any
		err error
	}
	done := make(chan result, 1)
	go func() {
		var res result
		cp, err := client.Client()
		if err != nil {
			res.err = handshakeError(err, path)
		} else if res.raw, err = cp.Dispense(wire.PluginName); err != nil {
			res.err = elements.Errorf("path", "%s: not a Junction element plugin: %v", path, err)
		}
		done <- res
	}()
	hctx, cancel := context.WithTimeout(ctx, StartTimeout)
	defer cancel()
	var res result
	select {
	case res = <-done:
	case <-hctx.Done():
		r.abort()
		go func() {
			<-done
			p.kill()
		}()
		if ctx.Err() != nil {
			return nil, errAborted
		}
		return nil, elements.Errorf("path", "%s: no answer to the go-plugin handshake within %v: killed it and its process group", path, StartTimeout)
	}
	err = res.err
	if err == nil {
		rpc, ok := res.raw.(*wire.Client)
		if !ok {
			err = elements.Errorf("path", "%s: not a Junction element plugin", path)
		}
		p.rpc = rpc
	}
	if err != nil {
		p.kill()
		return nil, err
	}
	p.pid, p.pidfd = r.pid, r.pidfd
	return p, nil
}

// kill ends the process and everything in its process group at once
// (SIGKILL: a plugin being replaced may be stuck in Process), closes its
// pipes, and releases the go-plugin client, waiting at most StopTimeout
// for each of the last two.
func (p *proc) kill() {
	p.r.abort()
	if !p.r.waitExit(p.stopTimeout) {
		logf("%s: pid %d still there %v after SIGKILL; not waiting for it", p.label, p.r.pid, p.stopTimeout)
		return
	}
	released := make(chan struct{})
	go func() {
		p.client.Kill()
		close(released)
	}()
	t := time.NewTimer(p.stopTimeout)
	defer t.Stop()
	select {
	case <-released:
	case <-t.C:
		logf("%s: go-plugin did not release the client within %v; not waiting for it", p.label, p.stopTimeout)
	}
	p.r.closePidfd()
	p.stderr.flush()
}

func callContext(ctx context.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeout(ctx, CallTimeout)
}

// callError names the deadline when a control call ran out of time.
func callError(err error) error {
	if status.Code(err) == codes.DeadlineExceeded || errors.Is(err, context.DeadlineExceeded) {
		return fmt.Errorf("no answer within %v", CallTimeout)
	}
	return err
}

// handshakeError turns go-plugin's start errors into what a user can act on.
func handshakeError(err error, path string) error {
	msg := err.Error()
	switch {
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

// maxLogLine bounds one logged line of a plugin's standard error: a
// plugin writing without newlines cannot grow the host's memory, nor one
// line the log.
const maxLogLine = 1024

// lineLogger logs a plugin's standard error line by line (a panic's stack
// trace included), each line cut at maxLogLine bytes.
type lineLogger struct {
	mu     sync.Mutex
	prefix string
	buf    []byte
	skip   bool // the rest of an overlong line is being discarded
}

func (l *lineLogger) Write(b []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	n := len(b)
	for len(b) > 0 {
		i := bytes.IndexByte(b, '\n')
		part := b
		if i >= 0 {
			part = b[:i]
		}
		if !l.skip {
			room := maxLogLine - len(l.buf)
			if len(part) > room {
				l.buf = append(l.buf, part[:room]...)
				l.emit(" [line cut]")
				l.skip = true
			} else {
				l.buf = append(l.buf, part...)
			}
		}
		if i < 0 {
			break
		}
		if !l.skip {
			l.emit("")
		}
		l.skip = false
		b = b[i+1:]
	}
	return n, nil
}

// emit logs the buffered line (with suffix) and empties the buffer.
func (l *lineLogger) emit(suffix string) {
	if line := strings.TrimRight(string(l.buf), "\r"); line != "" {
		logf("%s%s%s", l.prefix, line, suffix)
	}
	l.buf = l.buf[:0]
}

func (l *lineLogger) flush() {
	l.mu.Lock()
	defer l.mu.Unlock()
	if len(l.buf) > 0 {
		l.emit("")
	}
	l.skip = false
}
