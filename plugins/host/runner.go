package host

import (
	"context"
	"errors"
	"io"
	"os"
	"os/exec"
	"strconv"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// groupRunner is the go-plugin runner (ClientConfig.RunnerFunc) for plugin
// processes. go-plugin's own runner reads the handshake from a pipe that
// it alone can close, and its Kill signals only the direct child: a plugin
// that forks something holding its standard output (or one that answers
// nothing and keeps the pipe open) blocks the host's reads, and with them
// go-plugin's Start, Kill and Wait, for as long as the grandchild lives.
// groupRunner owns both pipes and starts the plugin as the leader of its
// own process group, so that abort can kill the whole group and close the
// pipes: every reader then returns, whatever the plugin's children do.
type groupRunner struct {
	cmd *exec.Cmd

	outR, errR *drainReader
	pid        int
	pidfd      int           // the leader's pidfd (-1 if unavailable)
	started    chan struct{} // closed once cmd.Start has returned
	exited     chan struct{} // closed when the leader has exited

	mu          sync.Mutex
	aborted     bool
	closed      bool
	pidfdClosed bool
}

func newGroupRunner() *groupRunner {
	return &groupRunner{pidfd: -1, started: make(chan struct{}), exited: make(chan struct{})}
}

// drainReader is one read end of a plugin pipe; eof is closed once a read
// has returned an error (end of file, or the pipe closed by abort).
type drainReader struct {
	f    *os.File
	once sync.Once
	eof  chan struct{}
}

func (d *drainReader) Read(b []byte) (int, error) {
	n, err := d.f.Read(b)
	if err != nil {
		d.once.Do(func() { close(d.eof) })
	}
	return n, err
}

func (d *drainReader) Close() error { return d.f.Close() }

// Start starts the plugin in its own process group, its standard output
// and error on pipes the runner owns.
func (r *groupRunner) Start(context.Context) error {
	defer close(r.started)
	r.mu.Lock()
	aborted := r.aborted
	r.mu.Unlock()
	if aborted {
		close(r.exited)
		return errors.New("start abandoned")
	}
	outR, outW, err := os.Pipe()
	if err != nil {
		close(r.exited)
		return err
	}
	errR, errW, err := os.Pipe()
	if err != nil {
		outR.Close()
		outW.Close()
		close(r.exited)
		return err
	}
	pidfd := -1
	r.cmd.Stdout, r.cmd.Stderr = outW, errW
	r.cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, PidFD: &pidfd}
	err = r.cmd.Start()
	// The child has its copies; ours would keep the pipes open forever.
	outW.Close()
	errW.Close()
	if err != nil {
		outR.Close()
		errR.Close()
		close(r.exited)
		return err
	}
	r.outR = &drainReader{f: outR, eof: make(chan struct{})}
	r.errR = &drainReader{f: errR, eof: make(chan struct{})}
	r.pid, r.pidfd = r.cmd.Process.Pid, pidfd
	go r.watch()
	r.mu.Lock()
	aborted = r.aborted
	r.mu.Unlock()
	if aborted {
		// Aborted while exec was under way: nothing must outlive it.
		r.signalGroup()
		r.closePipes()
	}
	return nil
}

// watch closes r.exited when the leader exits (its pidfd turns readable;
// go-plugin's Wait reaps it).
func (r *groupRunner) watch() {
	defer close(r.exited)
	if r.pidfd < 0 {
		for unix.Kill(r.pid, 0) == nil {
			time.Sleep(10 * time.Millisecond)
		}
		return
	}
	fds := []unix.PollFd{{Fd: int32(r.pidfd), Events: unix.POLLIN}}
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

// signalGroup sends SIGKILL to the plugin's process group (the leader and
// everything it forked that stayed in the group) and to the leader itself
// through its pidfd, which cannot hit a recycled pid.
func (r *groupRunner) signalGroup() {
	if r.pid <= 0 {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.pidfd >= 0 {
		unix.PidfdSendSignal(r.pidfd, unix.SIGKILL, nil, 0)
	}
	if !r.pidfdClosed {
		// Until the pidfd is closed the leader has not been seen to exit
		// and released, so its pid (the group's id) is not recycled.
		unix.Kill(-r.pid, unix.SIGKILL)
	}
}

// closePidfd releases the pidfd once the process is gone.
func (r *groupRunner) closePidfd() {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.pidfd >= 0 {
		unix.Close(r.pidfd)
		r.pidfd = -1
	}
	r.pidfdClosed = true
}

// closePipes closes the host's read ends: a reader blocked on a pipe that
// an escaped grandchild still holds returns at once.
func (r *groupRunner) closePipes() {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed || r.outR == nil {
		return
	}
	r.closed = true
	r.outR.Close()
	r.errR.Close()
}

// abort kills the group and, after at most drainGrace for what the plugin
// already wrote (a crash's last lines), closes the pipes. It never waits
// longer than drainGrace, and may be called at any time,
// from any goroutine, any number of times.
func (r *groupRunner) abort() {
	r.mu.Lock()
	r.aborted = true
	r.mu.Unlock()
	select {
	case <-r.started:
	default:
		return // Start sees aborted once exec returns
	}
	r.signalGroup()
	if r.outR == nil {
		return // never started
	}
	grace := time.NewTimer(drainGrace)
	defer grace.Stop()
	for _, eof := range []chan struct{}{r.outR.eof, r.errR.eof} {
		select {
		case <-eof:
		case <-grace.C:
			r.closePipes()
			return
		}
	}
	r.closePipes()
}

// waitExit waits at most d for the leader to exit.
func (r *groupRunner) waitExit(d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-r.exited:
		return true
	case <-t.C:
		return false
	}
}

// go-plugin's runner.Runner.

func (r *groupRunner) Wait(context.Context) error { return r.cmd.Wait() }
func (r *groupRunner) Kill(context.Context) error { r.abort(); return nil }
func (r *groupRunner) Stdout() io.ReadCloser      { return r.outR }
func (r *groupRunner) Stderr() io.ReadCloser      { return r.errR }
func (r *groupRunner) Name() string               { return r.cmd.Path }
func (r *groupRunner) Diagnose(context.Context) string {
	return "the plugin printed something other than the go-plugin handshake line (is it built with plugins/sdk?)"
}

func (r *groupRunner) ID() string {
	if r.pid <= 0 {
		return ""
	}
	return strconv.Itoa(r.pid)
}

func (r *groupRunner) PluginToHost(n, a string) (string, string, error) { return n, a, nil }
func (r *groupRunner) HostToPlugin(n, a string) (string, string, error) { return n, a, nil }
