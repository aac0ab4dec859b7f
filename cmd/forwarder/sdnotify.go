package main

import (
	"fmt"
	"io"
	"net"
	"os"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"golang.org/x/sys/unix"

	"github.com/junction-dataplane/junction/pipeline"
)

// The service manager's readiness protocol (systemd's sd_notify, for a
// unit of Type=notify): `forwarder run` under systemd sends one datagram
// per state change to the unix socket named by $NOTIFY_SOCKET —
// READY=1 once its devices are open and the stats endpoint and control
// socket answer, RELOADING=1 then READY=1 around a SIGHUP reload,
// STOPPING=1 when it starts to shut down — each with a STATUS= line that
// `systemctl status` shows. The protocol is a few newline-separated
// KEY=VALUE lines in one datagram; it needs no library.

// sdNotifier sends those datagrams; a nil *sdNotifier (no service
// manager) sends nothing.
type sdNotifier struct {
	conn *net.UnixConn
	// gen is the graph generation the last status named; reloading is
	// set between RELOADING=1 and its READY=1 (a status of its own then
	// would come between the two).
	gen       atomic.Uint64
	reloading atomic.Bool
	// every is how often to tell the watchdog (half of WatchdogSec=; 0:
	// no watchdog); stalled is set while a worker makes no rounds.
	every   time.Duration
	stalled bool
}

// newSDNotifier connects to $NOTIFY_SOCKET, or returns nil when it is
// unset. It unsets the variable: processes the graph starts (a Plugin's)
// must not speak for the forwarder.
func newSDNotifier() (*sdNotifier, error) {
	addr := os.Getenv("NOTIFY_SOCKET")
	if addr == "" {
		return nil, nil
	}
	every, err := watchdogEnv(os.Getenv("WATCHDOG_USEC"), os.Getenv("WATCHDOG_PID"), os.Getpid())
	if err != nil {
		return nil, err
	}
	for _, v := range []string{"NOTIFY_SOCKET", "WATCHDOG_USEC", "WATCHDOG_PID"} {
		os.Unsetenv(v)
	}
	// A path, or "@name" for Linux's abstract namespace (the net
	// package maps the leading @ to the NUL byte). systemd may also name
	// an AF_VSOCK address ("vsock:CID:PORT") for a whole virtual machine;
	// a forwarder is never that machine's init.
	if !strings.HasPrefix(addr, "/") && !strings.HasPrefix(addr, "@") {
		return nil, fmt.Errorf("NOTIFY_SOCKET=%q: not a unix socket path or @abstract name, the only kinds supported", addr)
	}
	c, err := net.DialUnix("unixgram", nil, &net.UnixAddr{Name: addr, Net: "unixgram"})
	if err != nil {
		return nil, fmt.Errorf("NOTIFY_SOCKET: %w", err)
	}
	return &sdNotifier{conn: c, every: every}, nil
}

// watchdogEnv reads systemd's watchdog variables: WATCHDOG_USEC is
// WatchdogSec= in microseconds, WATCHDOG_PID the process it is meant for
// (unset: this one). The forwarder tells the watchdog twice per period.
func watchdogEnv(usec, pid string, self int) (time.Duration, error) {
	if usec == "" || pid != "" && pid != strconv.Itoa(self) {
		return 0, nil
	}
	n, err := strconv.ParseUint(usec, 10, 63)
	if err != nil || n == 0 {
		return 0, fmt.Errorf("WATCHDOG_USEC=%q: want a positive number of microseconds", usec)
	}
	return time.Duration(n) * time.Microsecond / 2, nil
}

// watchdogEvery is how often run calls watchdog (0: never).
func (n *sdNotifier) watchdogEvery() time.Duration {
	if n == nil {
		return 0
	}
	return n.every
}

// watchdog tells systemd the forwarder is alive — WATCHDOG=1 — when every
// worker that runs made rounds between the two snapshots. An idle worker
// still makes one at least every elements.MaxIdleTick (it sleeps in
// bounded waits); one that made none is stuck (an element that never returns, a
// system call that blocks), and then the forwarder stays silent: after
// WatchdogSec systemd sends SIGABRT, whose goroutine dump in the journal
// shows where it hangs, and restarts the service.
func (n *sdNotifier) watchdog(prev, cur *pipeline.Snapshot, stderr io.Writer) {
	stuck := stalledWorkers(prev, cur)
	if len(stuck) == 0 {
		n.stalled = false
		n.send("WATCHDOG=1")
		return
	}
	if !n.stalled {
		fmt.Fprintf(stderr, "watchdog: worker %v made no round in %v: not telling systemd the forwarder is alive (WatchdogSec restarts it, with a stack dump)\n",
			stuck, cur.Uptime-prev.Uptime)
	}
	n.stalled = true
}

// stalledWorkers lists the workers that ran in both snapshots without
// making a round in between.
func stalledWorkers(prev, cur *pipeline.Snapshot) []int {
	before := map[int]pipeline.WorkerStats{}
	for _, w := range prev.Workers {
		before[w.Worker] = w
	}
	var stuck []int
	for _, w := range cur.Workers {
		if p, ok := before[w.Worker]; ok && p.Running && w.Running && w.Rounds == p.Rounds {
			stuck = append(stuck, w.Worker)
		}
	}
	return stuck
}

// send writes one notification: the lines in one datagram.
func (n *sdNotifier) send(lines ...string) error {
	if n == nil {
		return nil
	}
	// The service manager reads at once; a full buffer means it is gone
	// or stuck, and the forwarder must not wait on it.
	n.conn.SetWriteDeadline(time.Now().Add(time.Second))
	_, err := n.conn.Write([]byte(strings.Join(lines, "\n") + "\n"))
	return err
}

// ready says the forwarder runs r's graph, once its devices are open.
func (n *sdNotifier) ready(r *pipeline.Router) error {
	return n.send("READY=1", "STATUS="+n.runningStatus(r))
}

// generationChanged updates the status when the graph changed since the
// last one (a reload over the control socket, which brings no SIGHUP).
func (n *sdNotifier) generationChanged(r *pipeline.Router) error {
	if n == nil {
		return nil
	}
	if gen, _, _ := r.Generation(); gen == n.gen.Load() || n.reloading.Load() {
		return nil
	}
	return n.send("STATUS=" + n.runningStatus(r))
}

// reloaded ends a reload: READY=1, and a status that says when the
// reload failed (systemctl status shows it; the whole error is in the
// journal).
func (n *sdNotifier) reloaded(r *pipeline.Router, err error) error {
	if n == nil {
		return nil
	}
	defer n.reloading.Store(false)
	status := n.runningStatus(r)
	if err != nil {
		first, _, _ := strings.Cut(err.Error(), "\n")
		status += "; the last reload failed, graph unchanged: " + first
	}
	return n.send("READY=1", "STATUS="+status)
}

// startReload says a reload has begun; reloaded ends it. MONOTONIC_USEC is
// CLOCK_MONOTONIC now, which systemd (Type=notify-reload) matches against
// the time it sent the signal.
func (n *sdNotifier) startReload() error {
	if n == nil {
		return nil
	}
	n.reloading.Store(true)
	var ts unix.Timespec
	if err := unix.ClockGettime(unix.CLOCK_MONOTONIC, &ts); err != nil {
		return err
	}
	usec := ts.Sec*1e6 + ts.Nsec/1e3
	return n.send("RELOADING=1", fmt.Sprintf("MONOTONIC_USEC=%d", usec), "STATUS=reloading")
}

// stopping says the forwarder is shutting down (a signal, -duration, its
// sources drained).
func (n *sdNotifier) stopping(why string) error {
	return n.send("STOPPING=1", "STATUS=stopping: "+why)
}

func (n *sdNotifier) close() {
	if n != nil {
		n.conn.Close()
	}
}

// runningStatus is the STATUS= line: what runs, in a few words.
func (n *sdNotifier) runningStatus(r *pipeline.Router) string {
	gen, file, _ := r.Generation()
	if n != nil {
		n.gen.Store(gen)
	}
	g := r.Graph()
	if file == "" {
		file = g.File
	}
	return fmt.Sprintf("running %s (generation %d): %s, %s, %s", file, gen,
		count(r.Workers(), "worker"), count(len(g.Elements), "element"), count(len(g.Devices), "device"))
}
