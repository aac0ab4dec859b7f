package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/junction-dataplane/junction/drivers/kfeature"

	"github.com/junction-dataplane/junction/pipeline"
	"github.com/junction-dataplane/junction/pipeline/statshttp"
	"github.com/junction-dataplane/junction/pipeline/statstable"
)

func runCmd(args []string, stdout, stderr io.Writer) error {
	fs := newFlags("run", stderr)
	config := fs.String("config", "", "graph file (default: the embedded default graph)")
	duration := fs.Duration("duration", 0, "stop after this long (0: until Ctrl-C or every source is drained)")
	workers := fs.Int("workers", 0, "workers, one per core (0: the graph's [forwarder] workers, else all cores)")
	stats := fs.String("stats", "", `stats endpoint address ("off" disables; default: the graph's [forwarder] stats, else `+pipeline.DefaultStatsAddr+")")
	statsPublic := fs.Bool("stats-public", false, "allow a stats address that is not loopback (\":7879\", \"0.0.0.0:7879\", a LAN address): without it such an address is refused")
	quiet := fs.Bool("quiet", false, "no start banner and no per-second rate lines (the final table is still printed)")
	nopin := fs.Bool("nopin", false, "do not pin worker threads to CPUs")
	ctlPath := fs.String("control", "", `control socket for show, route, trace, capture ("off" disables; default: /run/junction/<config name>.sock)`)
	perWorker := fs.Bool("per-worker", false, "the exit table also lists each worker's rows under each element's totals")
	cpuList := fs.String("cpus", "", "CPUs to pin workers to, worker i on the i-th, e.g. 2,3 or 2-5 (default: every CPU the process may use)")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	path, err := configArg(fs, *config)
	if err != nil {
		return err
	}
	if *workers < 0 {
		return usageErrorf("-workers must be ≥ 0, got %d", *workers)
	}
	if *duration < 0 {
		return usageErrorf("-duration must be ≥ 0 (0: until Ctrl-C or every source is drained), got %v", *duration)
	}
	cpus, err := parseCPUList(*cpuList)
	if err != nil {
		return usageErrorf("-cpus: %v", err)
	}
	if err := checkCPUFlags(cpus, *nopin, onlineCPUs()); err != nil {
		return err
	}
	// A misspelt emulated feature would emulate nothing, silently.
	if err := kfeature.CheckEmulation(); err != nil {
		return err
	}
	// A socket given explicitly (as the service's unit does) that a live
	// forwarder serves: refused before any device is opened (ctlbusy.go).
	if *ctlPath != "" && *ctlPath != "off" {
		if err := checkControlFree(*ctlPath); err != nil {
			return err
		}
	}
	// The default socket: refused only when its forwarder runs this
	// very file (the graph started by hand beside its service).
	if *ctlPath == "" {
		if err := checkGraphNotRunning(path); err != nil {
			return err
		}
	}
	// Under systemd (Type=notify): readiness, reloads, stopping.
	sd, err := newSDNotifier()
	if err != nil {
		return err
	}
	defer sd.close()
	// Signals first: a SIGTERM while the graph loads (a plugin being
	// validated) ends the run once loading returns, instead of killing
	// the process and orphaning the plugin.
	ctx, stopSignals := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stopSignals()
	// SIGHUP too: one that arrives while the graph loads is a reload
	// once it runs, not the end of the process (its default action).
	hup := make(chan os.Signal, 1)
	signal.Notify(hup, syscall.SIGHUP)
	defer signal.Stop(hup)
	g, err := loadGraph(path)
	if err != nil {
		return err
	}
	if err := checkWorkers(*workers, g.Workers, *nopin, cpus, pipeline.ProcessCPUs()); err != nil {
		return err
	}
	return run(ctx, g, runOptions{
		file:     path,
		hup:      hup,
		duration: *duration, workers: *workers, stats: *stats, statsPublic: *statsPublic, quiet: *quiet, nopin: *nopin, cpus: cpus,
		control: *ctlPath, perWorker: *perWorker, notify: sd,
	}, stdout, stderr)
}

type runOptions struct {
	// file is the graph file SIGHUP re-reads ("": the embedded graph);
	// hup delivers SIGHUP (nil: run registers it itself).
	file     string
	hup      chan os.Signal
	duration time.Duration
	workers  int
	stats    string
	// statsPublic allows a non-loopback stats address.
	statsPublic bool
	quiet       bool
	nopin       bool
	cpus        []int
	// perWorker adds each worker's rows to the exit table.
	perWorker bool
	// every is the rate line interval (a second; tests shorten it).
	every time.Duration
	// control is the control socket's path ("": the default; "off").
	control string
	// notify tells a service manager the forwarder's state (nil: none).
	notify *sdNotifier
}

// run starts g, prints a rate line every second until the router finishes
// or ctx is cancelled (a signal), then prints the final accounting.
func run(ctx context.Context, g *pipeline.Graph, o runOptions, stdout, stderr io.Writer) error {
	if o.every <= 0 {
		o.every = time.Second
	}
	// A reload may change the graph's workers: refused beyond the CPUs
	// to pin them to, as at start.
	checkReload := func(g *pipeline.Graph) error {
		return checkWorkers(o.workers, g.Workers, o.nopin, o.cpus, pipeline.ProcessCPUs())
	}
	r, err := pipeline.Start(g, pipeline.Options{Workers: o.workers, NoPin: o.nopin, CPUs: o.cpus, Log: stderr, Duration: o.duration, CheckReload: checkReload})
	if err != nil {
		return err
	}
	// The stats endpoint, timers and the Go runtime run off the workers'
	// CPUs where some are free, with a scheduler slot of their own.
	hk, err := r.Housekeep()
	if err != nil {
		fmt.Fprintf(stderr, "warning: %v (other threads may share the workers' CPUs)\n", err)
	}

	// The stats endpoint: an address given explicitly must work; the
	// default one is best effort (another forwarder may hold the port).
	addr, explicit := o.stats, o.stats != ""
	if addr == "" {
		addr, explicit = g.Stats, g.Stats != ""
	}
	if addr == "" {
		addr = pipeline.DefaultStatsAddr
	}
	statsAt := ""
	if addr != "off" {
		a, err := statshttp.ServeWith(r, addr, statshttp.Options{Public: o.statsPublic})
		if errors.Is(err, statshttp.ErrNotLoopback) {
			err = fmt.Errorf("%w; give -stats-public to serve it there anyway", err)
		}
		switch {
		case err == nil:
			statsAt = "http://" + a.String() + "/stats"
		case explicit:
			r.Stop()
			r.Wait()
			return err
		default:
			fmt.Fprintf(stderr, "warning: %v (running without it)\n", err)
		}
	}

	ctl, ctlAt, err := runControl(r, g, o.control, stderr)
	if err != nil {
		r.Stop()
		r.Wait()
		return err
	}
	defer ctl.close()

	if !o.quiet {
		fmt.Fprintf(stdout, "junction: %s (generation 1): %s, %s, %s", g.File, count(r.Workers(), "worker"),
			count(len(g.Elements), "element"), count(len(g.Devices), "device"))
		if statsAt != "" {
			fmt.Fprintf(stdout, "; stats at %s", statsAt)
		}
		if ctlAt != "" {
			fmt.Fprintf(stdout, "; control at %s", ctlAt)
		}
		fmt.Fprintln(stdout)
		if len(hk.WorkerCPUs) > 0 {
			if len(hk.CPUs) > 0 {
				fmt.Fprintf(stdout, "workers on CPUs %s; other threads on CPUs %s\n", cpuList(hk.WorkerCPUs), cpuList(hk.CPUs))
			} else {
				fmt.Fprintf(stdout, "workers on CPUs %s; no CPU left for other threads: they share the workers' CPUs\n", cpuList(hk.WorkerCPUs))
			}
		}
	}

	// The devices are open and the stats endpoint and control socket
	// answer: the service is up.
	if err := o.notify.ready(r); err != nil {
		fmt.Fprintf(stderr, "warning: telling the service manager the forwarder is ready: %v\n", err)
	}

	// SIGHUP reloads the file (pipeline.Router.Reload): the workers
	// switch graphs between two batches, flows and neighbours stay.
	reloadOnHUP(ctx, r, o.file, o.hup, o.notify, stdout, stderr)

	tick := time.NewTicker(o.every)
	defer tick.Stop()
	prev := r.Snapshot()
	// systemd's watchdog (WatchdogSec=): alive while every worker makes
	// rounds (sdnotify.go).
	var watchdog <-chan time.Time
	if every := o.notify.watchdogEvery(); every > 0 {
		wt := time.NewTicker(every)
		defer wt.Stop()
		watchdog = wt.C
	}
	wdPrev := prev
	why := ""
loop:
	for {
		select {
		case <-tick.C:
			cur := r.Snapshot()
			if !o.quiet {
				fmt.Fprintln(stdout, statstable.RateLine(prev, cur))
			}
			prev = cur
			// A reload over the control socket: the service
			// manager's status names the new generation.
			o.notify.generationChanged(r)
		case <-watchdog:
			cur := r.Snapshot()
			o.notify.watchdog(wdPrev, cur, stderr)
			wdPrev = cur
		case <-r.Done():
			o.notify.stopping("the graph stopped")
			break loop
		case <-ctx.Done():
			why = "signal"
			o.notify.stopping(why)
			r.Stop()
			<-r.Done()
			break loop
		}
	}
	closeErr := r.Wait()
	switch {
	case why != "":
	case r.Stopped():
		why = "duration reached"
	default:
		why = "every source drained"
	}
	final := r.Snapshot()
	fmt.Fprintf(stdout, "\nstopped after %s (%s)\n", final.Uptime.Round(time.Millisecond), why)
	if gr := final.Graph; gr.Generation > 1 {
		fmt.Fprintf(stdout, "graph generation %d (%s, loaded %s)\n", gr.Generation, gr.File, gr.LoadedAt.Format(time.RFC3339))
	}
	if err := statstable.Render(stdout, final, statstable.Options{PerWorker: o.perWorker}); err != nil {
		return err
	}
	if closeErr != nil {
		return fmt.Errorf("closing: %w", closeErr)
	}
	return nil
}

func count(n int, what string) string {
	if n == 1 {
		return "1 " + what
	}
	return fmt.Sprintf("%d %ss", n, what)
}

// parseCPUList parses a CPU list such as "0,2" or "2-5,8" (Linux's cpuset
// list format); "" is no list.
func parseCPUList(s string) ([]int, error) {
	if s == "" {
		return nil, nil
	}
	var cpus []int
	for _, part := range strings.Split(s, ",") {
		lo, hi, isRange := strings.Cut(strings.TrimSpace(part), "-")
		a, err := strconv.Atoi(lo)
		b := a
		if err == nil && isRange {
			b, err = strconv.Atoi(hi)
		}
		if err != nil || a < 0 || b < a || b >= 1<<16 {
			return nil, fmt.Errorf("%q: want CPU numbers or ranges such as 0,2 or 2-5", part)
		}
		for c := a; c <= b; c++ {
			cpus = append(cpus, c)
		}
	}
	return cpus, nil
}

// cpuList prints CPU numbers as a list: "0,1".
func cpuList(cpus []int) string {
	s := make([]string, len(cpus))
	for i, c := range cpus {
		s[i] = strconv.Itoa(c)
	}
	return strings.Join(s, ",")
}
