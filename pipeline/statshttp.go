package pipeline

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// DefaultStatsAddr is where `forwarder run` serves its stats unless told
// otherwise: loopback only, since the counters describe the network.
const DefaultStatsAddr = "127.0.0.1:7879"

// The stats endpoint's defaults (StatsOptions). The endpoint shares the
// machine with the workers, so what a flood of clients can make it do is
// bounded: one snapshot per StatsRefresh whatever the request rate, at most
// DefaultStatsMaxConns connections served at once (the others wait in the
// kernel's accept queue), DefaultStatsMaxRequests requests per connection
// before it is closed (so that waiting clients get their turn), at most
// DefaultStatsRate requests answered per second in all (a request beyond
// waits for its turn, like nginx's limit_req with delay: the snapshot
// changes only every StatsRefresh, so faster polling learns nothing, and a
// client in a loop then spends its time waiting instead of taking CPU from
// the workers), and timeouts on every stage of a connection.
const (
	StatsRefresh             = 100 * time.Millisecond
	DefaultStatsRate         = 200
	DefaultStatsMaxConns     = 32
	DefaultStatsMaxRequests  = 100
	DefaultStatsIdleTimeout  = 30 * time.Second
	DefaultStatsReadTimeout  = 10 * time.Second
	DefaultStatsWriteTimeout = 10 * time.Second
	statsHeaderTimeout       = 5 * time.Second
	statsMaxHeaderBytes      = 8 << 10
)

// statsBusyHeaderTimeout: while every connection slot is taken, a new
// connection that has not sent its whole request header this long after
// it was accepted is closed (a kept-alive one between requests is closed
// at once: limitListener), so that slow clients (slowloris: a header line
// every few seconds) cannot hold every slot for statsHeaderTimeout each
// while others wait; a client sends its request in one write, in
// microseconds. A variable for the tests.
var statsBusyHeaderTimeout = 100 * time.Millisecond

// ErrStatsNotLoopback is what ServeStatsWith returns for an address that is
// not a loopback one (":7999", "0.0.0.0:7999", "192.0.2.1:7999", a host
// name other than localhost) unless StatsOptions.Public is set.
var ErrStatsNotLoopback = errors.New("not a loopback address: the counters describe the network and would be served beyond this machine")

// StatsOptions tune the stats endpoint; the zero value is the defaults.
type StatsOptions struct {
	// Public allows an address other than a loopback one.
	Public bool
	// MaxConns bounds the connections served at once (0: default).
	MaxConns int
	// MaxRequests is how many requests a connection may make before the
	// server closes it (0: default).
	MaxRequests int
	// Rate bounds the requests answered per second, in all (0: default;
	// < 0: no bound).
	Rate int
	// IdleTimeout closes a keep-alive connection idle this long (0:
	// default); ReadTimeout and WriteTimeout bound reading a request and
	// writing its response (0: default).
	IdleTimeout, ReadTimeout, WriteTimeout time.Duration
}

func (o StatsOptions) withDefaults() StatsOptions {
	if o.MaxConns <= 0 {
		o.MaxConns = DefaultStatsMaxConns
	}
	if o.MaxRequests <= 0 {
		o.MaxRequests = DefaultStatsMaxRequests
	}
	if o.Rate == 0 {
		o.Rate = DefaultStatsRate
	}
	if o.IdleTimeout <= 0 {
		o.IdleTimeout = DefaultStatsIdleTimeout
	}
	if o.ReadTimeout <= 0 {
		o.ReadTimeout = DefaultStatsReadTimeout
	}
	if o.WriteTimeout <= 0 {
		o.WriteTimeout = DefaultStatsWriteTimeout
	}
	return o
}

// statsBodies is one published snapshot, encoded once for every format.
type statsBodies struct {
	at         time.Time
	json, prom []byte
}

// statsCache publishes the router's snapshot at most once per refresh
// interval: requests within it are answered with the same encoded bodies,
// so that the cost of the endpoint does not grow with its request rate.
type statsCache struct {
	r       *Router
	refresh time.Duration
	mu      sync.Mutex // serialises rebuilds: concurrent requests wait for one
	cur     atomic.Pointer[statsBodies]
	builds  atomic.Uint64 // snapshots taken (tests)
}

// bodies returns the published snapshot, building a new one if the last is
// older than the refresh interval.
func (c *statsCache) bodies() *statsBodies {
	if b := c.cur.Load(); b != nil && time.Since(b.at) < c.refresh {
		return b
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if b := c.cur.Load(); b != nil && time.Since(b.at) < c.refresh {
		return b // built while this request waited
	}
	s := c.r.Snapshot()
	b := &statsBodies{at: time.Now()}
	var jb, pb bytes.Buffer
	enc := json.NewEncoder(&jb)
	enc.SetIndent("", "  ")
	enc.Encode(s)
	s.WritePrometheus(&pb)
	b.json, b.prom = jb.Bytes(), pb.Bytes()
	c.builds.Add(1)
	c.cur.Store(b)
	return b
}

// StatsHandler serves the router's accounting: GET /stats is the snapshot
// as JSON, GET /metrics the same in Prometheus text format. Both are
// published at most every StatsRefresh (100 ms) and served from the
// encoded bodies: a request never walks the counters itself.
func (r *Router) StatsHandler() http.Handler {
	h, _ := r.statsHandler(StatsOptions{}.withDefaults())
	return h
}

func (r *Router) statsHandler(o StatsOptions) (http.Handler, *statsCache) {
	c := &statsCache{r: r, refresh: StatsRefresh}
	pace := newPacer(o.Rate)
	serve := func(ctype string, body func(*statsBodies) []byte) http.HandlerFunc {
		return func(w http.ResponseWriter, req *http.Request) {
			countRequest(w, req, o.MaxRequests)
			if !pace.wait(req.Context()) {
				return // the client went away
			}
			b := c.bodies()
			w.Header().Set("Content-Type", ctype)
			w.Header().Set("Content-Length", strconv.Itoa(len(body(b))))
			w.Write(body(b))
		}
	}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /stats", serve("application/json", func(b *statsBodies) []byte { return b.json }))
	mux.HandleFunc("GET /metrics", serve("text/plain; version=0.0.4; charset=utf-8", func(b *statsBodies) []byte { return b.prom }))
	mux.HandleFunc("GET /{$}", func(w http.ResponseWriter, req *http.Request) {
		countRequest(w, req, o.MaxRequests)
		if !pace.wait(req.Context()) {
			return
		}
		fmt.Fprintln(w, "junction forwarder: GET /stats (JSON), GET /metrics (Prometheus)")
	})
	return mux, c
}

// pacer spaces requests at least 1/rate apart, in the order they arrive:
// each reserves the next free instant and sleeps until it.
type pacer struct {
	interval time.Duration
	mu       sync.Mutex
	next     time.Time
}

func newPacer(rate int) *pacer {
	if rate <= 0 {
		return nil
	}
	return &pacer{interval: time.Second / time.Duration(rate)}
}

// wait returns when the request's turn has come, or false if ctx ended
// first.
func (p *pacer) wait(ctx context.Context) bool {
	if p == nil {
		return true
	}
	p.mu.Lock()
	now := time.Now()
	at := p.next
	if at.Before(now) {
		at = now
	}
	p.next = at.Add(p.interval)
	p.mu.Unlock()
	d := at.Sub(now)
	if d <= 0 {
		return true
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	}
}

// connRequestsKey holds a connection's request count (*atomic.Int64) in
// its requests' context (http.Server.ConnContext).
type connRequestsKey struct{}

// limitListenerKey holds the server's *limitListener in a request's
// context.
type limitListenerKey struct{}

// countRequest counts a request on its connection and, at the limit, asks
// the server to close the connection after the response (like nginx's
// keepalive_requests): a client cannot hold one of the limited connections
// for ever while others wait. While every connection slot is taken, each
// response closes its connection, so that clients waiting in the accept queue are served in
// turn instead of timing out behind kept-alive ones.
func countRequest(w http.ResponseWriter, req *http.Request, max int) {
	n, ok := req.Context().Value(connRequestsKey{}).(*atomic.Int64)
	if !ok {
		return
	}
	ln, _ := req.Context().Value(limitListenerKey{}).(*limitListener)
	if n.Add(1) >= int64(max) || ln != nil && ln.full() {
		w.Header().Set("Connection", "close")
	}
}

// ServeStats listens on addr and serves StatsHandler until the router
// closes, with the default StatsOptions (loopback addresses only). It
// returns the address actually bound (useful with port 0).
func (r *Router) ServeStats(addr string) (net.Addr, error) {
	a, _, err := r.serveStats(addr, StatsOptions{})
	return a, err
}

// ServeStatsWith is ServeStats with options.
func (r *Router) ServeStatsWith(addr string, o StatsOptions) (net.Addr, error) {
	a, _, err := r.serveStats(addr, o)
	return a, err
}

func (r *Router) serveStats(addr string, o StatsOptions) (net.Addr, *statsCache, error) {
	o = o.withDefaults()
	if !o.Public {
		if err := checkLoopback(addr); err != nil {
			return nil, nil, fmt.Errorf("stats endpoint %s: %w", addr, err)
		}
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, nil, fmt.Errorf("stats endpoint: %w", err)
	}
	h, c := r.statsHandler(o)
	limited := newLimitListener(ln, o.MaxConns)
	limited.headerTimeout = statsBusyHeaderTimeout
	srv := &http.Server{
		Handler:           h,
		ReadHeaderTimeout: min(statsHeaderTimeout, o.ReadTimeout),
		ReadTimeout:       o.ReadTimeout,
		WriteTimeout:      o.WriteTimeout,
		IdleTimeout:       o.IdleTimeout,
		MaxHeaderBytes:    statsMaxHeaderBytes,
		BaseContext: func(net.Listener) context.Context {
			return context.WithValue(context.Background(), limitListenerKey{}, limited)
		},
		ConnContext: func(ctx context.Context, _ net.Conn) context.Context {
			return context.WithValue(ctx, connRequestsKey{}, new(atomic.Int64))
		},
		ConnState: limited.connState,
		ErrorLog:  log.New(io.Discard, "", 0), // accept errors under a flood are not the operator's concern
	}
	go srv.Serve(limited)
	r.onClose(func() error {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		if err := srv.Shutdown(ctx); err != nil && !errors.Is(err, http.ErrServerClosed) {
			// Connections still busy after a second are cut.
			srv.Close()
		}
		return nil
	})
	return ln.Addr(), c, nil
}

// checkLoopback accepts a listen address whose host is a loopback IP or
// "localhost"; an empty host or an unspecified IP (every interface) and
// any other address or name is ErrStatsNotLoopback.
func checkLoopback(addr string) error {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return err
	}
	if host == "localhost" {
		return nil
	}
	if ip := net.ParseIP(host); ip != nil && ip.IsLoopback() {
		return nil
	}
	return ErrStatsNotLoopback
}

// limitListener accepts at most n connections at once: Accept waits for a
// served connection to close, leaving the others in the kernel's accept
// queue (what golang.org/x/net/netutil.LimitListener does). A kept-alive
// connection idle while every slot is taken is closed (as nginx drains
// keep-alive connections when it runs out of them): idle clients do not
// keep waiting ones out until their idle timeout. So is, while Accept
// waits for a slot, one still sending its first request's header
// headerTimeout after it was accepted (statsBusyHeaderTimeout).
type limitListener struct {
	net.Listener
	slots         chan struct{}
	done          chan struct{}
	closeOnce     sync.Once
	headerTimeout time.Duration
	mu            sync.Mutex
	idle          map[net.Conn]struct{} // served connections between requests
	// reading holds the new connections, reading their first request's
	// header, with when they were accepted.
	reading map[net.Conn]time.Time
	// open counts the accepted connections not yet closed (a slot is
	// also held by an Accept waiting for its connection).
	open atomic.Int32
}

func newLimitListener(ln net.Listener, n int) *limitListener {
	return &limitListener{Listener: ln, slots: make(chan struct{}, n), done: make(chan struct{}),
		idle: map[net.Conn]struct{}{}, reading: map[net.Conn]time.Time{}}
}

func (l *limitListener) Accept() (net.Conn, error) {
	select {
	case l.slots <- struct{}{}:
	case <-l.done:
		return nil, net.ErrClosed
	default:
		if err := l.waitSlot(); err != nil {
			return nil, err
		}
	}
	c, err := l.Listener.Accept()
	if err != nil {
		<-l.slots
		return nil, err
	}
	if l.open.Add(1) == int32(cap(l.slots)) {
		l.closeIdle()
	}
	return &limitConn{Conn: c, release: func() { l.open.Add(-1); <-l.slots }}, nil
}

// waitSlot waits for a free slot, closing meanwhile the connections that
// have been reading their request header for longer than headerTimeout.
func (l *limitListener) waitSlot() error {
	every := max(l.headerTimeout/4, 10*time.Millisecond)
	tick := time.NewTicker(every)
	defer tick.Stop()
	for {
		select {
		case l.slots <- struct{}{}:
			return nil
		case <-l.done:
			return net.ErrClosed
		case now := <-tick.C:
			if l.headerTimeout > 0 {
				l.closeSlow(now.Add(-l.headerTimeout))
			}
		}
	}
}

// closeSlow closes the connections reading a request header since before
// t.
func (l *limitListener) closeSlow(t time.Time) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for c, since := range l.reading {
		if since.Before(t) {
			c.Close()
			delete(l.reading, c)
		}
	}
}

// connState tracks the idle connections and the new ones, which read
// their first request's header until StateActive (net/http sets it once
// the header is read, before the handler runs). A kept-alive connection
// reads its next request's header while StateIdle: it is closed when
// every slot is taken, as an idle one.
func (l *limitListener) connState(c net.Conn, st http.ConnState) {
	l.mu.Lock()
	if st == http.StateIdle {
		l.idle[c] = struct{}{}
	} else {
		delete(l.idle, c)
	}
	if st == http.StateNew {
		l.reading[c] = time.Now()
	} else {
		delete(l.reading, c)
	}
	l.mu.Unlock()
	if st == http.StateIdle && l.full() {
		c.Close()
	}
}

func (l *limitListener) closeIdle() {
	l.mu.Lock()
	defer l.mu.Unlock()
	for c := range l.idle {
		c.Close()
		delete(l.idle, c)
	}
}

// full reports whether every slot is taken by an accepted connection.
func (l *limitListener) full() bool { return int(l.open.Load()) >= cap(l.slots) }

func (l *limitListener) Close() error {
	l.closeOnce.Do(func() { close(l.done) })
	return l.Listener.Close()
}

// limitConn gives its slot back once, on the first Close.
type limitConn struct {
	net.Conn
	once    sync.Once
	release func()
}

func (c *limitConn) Close() error {
	err := c.Conn.Close()
	c.once.Do(c.release)
	return err
}

// WritePrometheus writes the snapshot in the Prometheus text exposition
// format.
func (s *Snapshot) WritePrometheus(w io.Writer) error {
	pw := &promWriter{w: w}
	pw.family("junction_element_batches_total", "counter", "Batches received by an element instance.")
	for _, e := range s.Elements {
		pw.sample("junction_element_batches_total", e.Batches, "element", e.Element, "type", e.Type, "worker", itoa(e.Worker))
	}
	pw.family("junction_element_packets_total", "counter", "Packets received by an element instance.")
	for _, e := range s.Elements {
		pw.sample("junction_element_packets_total", e.Packets, "element", e.Element, "type", e.Type, "worker", itoa(e.Worker))
	}
	pw.family("junction_element_drops_total", "counter", "Packets an element instance lost, by reason (not what it consumed by design).")
	for _, e := range s.Elements {
		for _, c := range e.Counters {
			if c.Drop {
				pw.sample("junction_element_drops_total", c.Value, "element", e.Element, "type", e.Type, "worker", itoa(e.Worker), "reason", c.Name)
			}
		}
	}
	pw.family("junction_element_consumed_total", "counter", "Packets an element instance freed by design (Discard, ARP that needs no answer), by reason: not losses.")
	for _, e := range s.Elements {
		for _, c := range e.Counters {
			if c.Consumed {
				pw.sample("junction_element_consumed_total", c.Value, "element", e.Element, "type", e.Type, "worker", itoa(e.Worker), "reason", c.Name)
			}
		}
	}
	pw.family("junction_element_events_total", "counter", "Element-specific event counters (neither drops nor consumptions).")
	for _, e := range s.Elements {
		for _, c := range e.Counters {
			if !c.Drop && !c.Consumed {
				pw.sample("junction_element_events_total", c.Value, "element", e.Element, "type", e.Type, "worker", itoa(e.Worker), "counter", c.Name)
			}
		}
	}
	// Element time is measured in sampled rounds (one in TimingEvery):
	// the exported counters are the measured ones, which only grow;
	// ns/packet = rate(nanoseconds) / rate(timed packets).
	pw.family("junction_element_nanoseconds_total", "counter", "Self time of an element instance measured in timed rounds, nanoseconds.")
	for _, e := range s.Elements {
		pw.sample("junction_element_nanoseconds_total", e.TimedNanos, "element", e.Element, "type", e.Type, "worker", itoa(e.Worker))
	}
	pw.family("junction_element_timed_packets_total", "counter", "Packets an element instance received in timed rounds.")
	for _, e := range s.Elements {
		pw.sample("junction_element_timed_packets_total", e.TimedPackets, "element", e.Element, "type", e.Type, "worker", itoa(e.Worker))
	}
	pw.family("junction_worker_busy_seconds_total", "counter", "Time a worker spent on rounds that brought packets.")
	for _, ws := range s.Workers {
		pw.sampleFloat("junction_worker_busy_seconds_total", float64(ws.BusyNanos)/1e9, "worker", itoa(ws.Worker))
	}
	pw.family("junction_worker_timed_busy_seconds_total", "counter", "Busy time of the timed rounds (what element nanoseconds add up to).")
	for _, ws := range s.Workers {
		pw.sampleFloat("junction_worker_timed_busy_seconds_total", float64(ws.TimedBusyNanos)/1e9, "worker", itoa(ws.Worker))
	}
	pw.family("junction_worker_idle_seconds_total", "counter", "Time a worker spent on empty polls and backoff.")
	for _, ws := range s.Workers {
		pw.sampleFloat("junction_worker_idle_seconds_total", float64(ws.IdleNanos)/1e9, "worker", itoa(ws.Worker))
	}
	// Device counters: one family per counter name (junction_device_rx_total,
	// junction_device_tx_drops_total, ...), labelled by device.
	var names []string
	seen := map[string]bool{}
	for _, d := range s.Devices {
		for _, c := range d.Counters {
			if n := "junction_device_" + promName(c.Name) + "_total"; !seen[n] {
				seen[n] = true
				names = append(names, n)
			}
		}
	}
	for _, n := range names {
		pw.family(n, "counter", "Driver counter.")
		for _, d := range s.Devices {
			for _, c := range d.Counters {
				if "junction_device_"+promName(c.Name)+"_total" == n {
					pw.sample(n, c.Value, "device", d.Device, "driver", d.Driver)
				}
			}
		}
	}
	pw.family("junction_rx_packets_total", "counter", "Packets the sources took from their devices.")
	pw.sample("junction_rx_packets_total", s.Totals.RX)
	pw.family("junction_tx_packets_total", "counter", "Packets the devices transmitted.")
	pw.sample("junction_tx_packets_total", s.Totals.TX)
	pw.family("junction_drops_total", "counter", "Packets lost: dropped by elements or lost by the devices on transmit.")
	pw.sample("junction_drops_total", s.Totals.Drops)
	pw.family("junction_consumed_total", "counter", "Packets elements freed by design (Discard, ARP that needs no answer): not losses.")
	pw.sample("junction_consumed_total", s.Totals.Consumed)
	pw.family("junction_in_flight_packets", "gauge", "Packets handed between workers and not yet taken (rx + created = tx + drops + consumed + in flight + held).")
	pw.sample("junction_in_flight_packets", s.Totals.InFlight)
	pw.family("junction_uptime_seconds", "gauge", "Time since the workers started.")
	pw.sampleFloat("junction_uptime_seconds", s.Uptime.Seconds())
	pw.family("junction_graph_generation", "gauge", "Generation of the running graph: 1 at start, one more per reload.")
	pw.sampleFloat("junction_graph_generation", float64(s.Graph.Generation))
	pw.family("junction_graph_loaded_timestamp_seconds", "gauge", "When the running graph was loaded (Unix time).")
	pw.sampleFloat("junction_graph_loaded_timestamp_seconds", float64(s.Graph.LoadedAt.UnixNano())/1e9)
	return pw.err
}

type promWriter struct {
	w   io.Writer
	err error
}

func (p *promWriter) printf(format string, args ...any) {
	if p.err == nil {
		_, p.err = fmt.Fprintf(p.w, format, args...)
	}
}

func (p *promWriter) family(name, typ, help string) {
	p.printf("# HELP %s %s\n# TYPE %s %s\n", name, help, name, typ)
}

func (p *promWriter) sample(name string, v uint64, labels ...string) {
	p.printf("%s%s %d\n", name, promLabels(labels), v)
}

func (p *promWriter) sampleFloat(name string, v float64, labels ...string) {
	p.printf("%s%s %s\n", name, promLabels(labels), strconv.FormatFloat(v, 'g', -1, 64))
}

func promLabels(kv []string) string {
	if len(kv) == 0 {
		return ""
	}
	var sb strings.Builder
	sb.WriteByte('{')
	for i := 0; i+1 < len(kv); i += 2 {
		if i > 0 {
			sb.WriteByte(',')
		}
		sb.WriteString(kv[i])
		sb.WriteString(`="`)
		sb.WriteString(promEscape(kv[i+1]))
		sb.WriteByte('"')
	}
	sb.WriteByte('}')
	return sb.String()
}

var promEscaper = strings.NewReplacer(`\`, `\\`, `"`, `\"`, "\n", `\n`)

func promEscape(s string) string { return promEscaper.Replace(s) }

// promName turns a counter name ("tx drops", "rx-bytes") into a metric name
// part ("tx_drops", "rx_bytes").
func promName(s string) string {
	var sb strings.Builder
	for _, c := range strings.ToLower(s) {
		switch {
		case c >= 'a' && c <= 'z', c >= '0' && c <= '9':
			sb.WriteRune(c)
		default:
			if sb.Len() > 0 && !strings.HasSuffix(sb.String(), "_") {
				sb.WriteByte('_')
			}
		}
	}
	return strings.TrimSuffix(sb.String(), "_")
}

func itoa(i int) string { return strconv.Itoa(i) }

// FetchSnapshot reads a running forwarder's snapshot from its stats
// endpoint (what `forwarder stats` does).
func FetchSnapshot(addr string) (*Snapshot, error) {
	body, err := fetch(addr, "/stats")
	if err != nil {
		return nil, err
	}
	s := &Snapshot{}
	if err := json.Unmarshal(body, s); err != nil {
		return nil, fmt.Errorf("stats from %s: %w", addr, err)
	}
	return s, nil
}

// FetchRaw returns the body of GET path ("/stats", "/metrics") from a
// forwarder's stats endpoint.
func FetchRaw(addr, path string) ([]byte, error) { return fetch(addr, path) }

func fetch(addr, path string) ([]byte, error) {
	url := addr
	if !strings.Contains(url, "://") {
		url = "http://" + url
	}
	c := &http.Client{Timeout: 5 * time.Second}
	resp, err := c.Get(strings.TrimSuffix(url, "/") + path)
	if err != nil {
		return nil, fmt.Errorf("stats endpoint %s: %w (is `forwarder run` running with its stats endpoint there?)", addr, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, fmt.Errorf("stats endpoint %s: %w", addr, err)
	}
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("stats endpoint %s%s: %s", addr, path, resp.Status)
	}
	return body, nil
}
