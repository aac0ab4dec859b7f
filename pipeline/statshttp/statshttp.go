package statshttp

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

	"github.com/junction-dataplane/junction/pipeline"
)

// The stats endpoint's defaults (Options). The endpoint shares the
// machine with the workers, so what a flood of clients can make it do is
// bounded: one snapshot per Refresh whatever the request rate, at most
// DefaultMaxConns connections served at once (the others wait in the
// kernel's accept queue), DefaultMaxRequests requests per connection
// before it is closed (so that waiting clients get their turn), at most
// DefaultRate requests answered per second in all (a request beyond
// waits for its turn, like nginx's limit_req with delay: the snapshot
// changes only every Refresh, so faster polling learns nothing, and a
// client in a loop then spends its time waiting instead of taking CPU from
// the workers), and timeouts on every stage of a connection.
const (
	Refresh             = 100 * time.Millisecond
	DefaultRate         = 200
	DefaultMaxConns     = 32
	DefaultMaxRequests  = 100
	DefaultIdleTimeout  = 30 * time.Second
	DefaultReadTimeout  = 10 * time.Second
	DefaultWriteTimeout = 10 * time.Second
	headerTimeout       = 5 * time.Second
	maxHeaderBytes      = 8 << 10
)

// busyHeaderTimeout: while every connection slot is taken, a new
// connection that has not sent its whole request header this long after
// it was accepted is closed (a kept-alive one between requests is closed
// at once: limitListener), so that slow clients (slowloris: a header line
// every few seconds) cannot hold every slot for headerTimeout each
// while others wait; a client sends its request in one write, in
// microseconds. A variable for the tests.
var busyHeaderTimeout = 100 * time.Millisecond

// ErrNotLoopback is what ServeWith returns for an address that is
// not a loopback one (":7999", "0.0.0.0:7999", "192.0.2.1:7999", a host
// name other than localhost) unless Options.Public is set.
var ErrNotLoopback = errors.New("not a loopback address: the counters describe the network and would be served beyond this machine")

// Options tune the stats endpoint; the zero value is the defaults.
type Options struct {
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

func (o Options) withDefaults() Options {
	if o.MaxConns <= 0 {
		o.MaxConns = DefaultMaxConns
	}
	if o.MaxRequests <= 0 {
		o.MaxRequests = DefaultMaxRequests
	}
	if o.Rate == 0 {
		o.Rate = DefaultRate
	}
	if o.IdleTimeout <= 0 {
		o.IdleTimeout = DefaultIdleTimeout
	}
	if o.ReadTimeout <= 0 {
		o.ReadTimeout = DefaultReadTimeout
	}
	if o.WriteTimeout <= 0 {
		o.WriteTimeout = DefaultWriteTimeout
	}
	return o
}

// bodies is one published snapshot, encoded once for every format.
type bodies struct {
	at         time.Time
	json, prom []byte
}

// cache publishes the router's snapshot at most once per refresh
// interval: requests within it are answered with the same encoded bodies,
// so that the cost of the endpoint does not grow with its request rate.
type cache struct {
	r       *pipeline.Router
	refresh time.Duration
	mu      sync.Mutex // serialises rebuilds: concurrent requests wait for one
	cur     atomic.Pointer[bodies]
	builds  atomic.Uint64 // snapshots taken (tests)
}

// bodies returns the published snapshot, building a new one if the last is
// older than the refresh interval.
func (c *cache) current() *bodies {
	if b := c.cur.Load(); b != nil && time.Since(b.at) < c.refresh {
		return b
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if b := c.cur.Load(); b != nil && time.Since(b.at) < c.refresh {
		return b // built while this request waited
	}
	s := c.r.Snapshot()
	b := &bodies{at: time.Now()}
	var jb, pb bytes.Buffer
	enc := json.NewEncoder(&jb)
	enc.SetIndent("", "  ")
	enc.Encode(s)
	WritePrometheus(&pb, s)
	b.json, b.prom = jb.Bytes(), pb.Bytes()
	c.builds.Add(1)
	c.cur.Store(b)
	return b
}

// Handler serves the router's accounting: GET /stats is the snapshot
// as JSON, GET /metrics the same in Prometheus text format. Both are
// published at most every Refresh (100 ms) and served from the
// encoded bodies: a request never walks the counters itself.
func Handler(r *pipeline.Router) http.Handler {
	h, _ := handler(r, Options{}.withDefaults())
	return h
}

func handler(r *pipeline.Router, o Options) (http.Handler, *cache) {
	c := &cache{r: r, refresh: Refresh}
	pace := newPacer(o.Rate)
	serve := func(ctype string, body func(*bodies) []byte) http.HandlerFunc {
		return func(w http.ResponseWriter, req *http.Request) {
			countRequest(w, req, o.MaxRequests)
			if !pace.wait(req.Context()) {
				return // the client went away
			}
			b := c.current()
			w.Header().Set("Content-Type", ctype)
			w.Header().Set("Content-Length", strconv.Itoa(len(body(b))))
			w.Write(body(b))
		}
	}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /stats", serve("application/json", func(b *bodies) []byte { return b.json }))
	mux.HandleFunc("GET /metrics", serve("text/plain; version=0.0.4; charset=utf-8", func(b *bodies) []byte { return b.prom }))
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

// Serve listens on addr and serves Handler until the router closes, with
// the default Options (loopback addresses only). It returns the address
// actually bound (useful with port 0).
func Serve(r *pipeline.Router, addr string) (net.Addr, error) {
	a, _, err := serve(r, addr, Options{})
	return a, err
}

// ServeWith is Serve with options.
func ServeWith(r *pipeline.Router, addr string, o Options) (net.Addr, error) {
	a, _, err := serve(r, addr, o)
	return a, err
}

func serve(r *pipeline.Router, addr string, o Options) (net.Addr, *cache, error) {
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
	h, c := handler(r, o)
	limited := newLimitListener(ln, o.MaxConns)
	limited.headerTimeout = busyHeaderTimeout
	srv := &http.Server{
		Handler:           h,
		ReadHeaderTimeout: min(headerTimeout, o.ReadTimeout),
		ReadTimeout:       o.ReadTimeout,
		WriteTimeout:      o.WriteTimeout,
		IdleTimeout:       o.IdleTimeout,
		MaxHeaderBytes:    maxHeaderBytes,
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
	r.OnClose(func() error {
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
// any other address or name is ErrNotLoopback.
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
	return ErrNotLoopback
}

// limitListener accepts at most n connections at once: Accept waits for a
// served connection to close, leaving the others in the kernel's accept
// queue (what golang.org/x/net/netutil.LimitListener does). A kept-alive
// connection idle while every slot is taken is closed (as nginx drains
// keep-alive connections when it runs out of them): idle clients do not
// keep waiting ones out until their idle timeout. So is, while Accept
// waits for a slot, one still sending its first request's header
// headerTimeout after it was accepted (busyHeaderTimeout).
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

// Fetch reads a running forwarder's snapshot from its stats endpoint
// (what `forwarder stats` does).
func Fetch(addr string) (*pipeline.Snapshot, error) {
	body, err := fetch(addr, "/stats")
	if err != nil {
		return nil, err
	}
	s := &pipeline.Snapshot{}
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
