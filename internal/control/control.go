package control

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log"
	"net"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"time"

	"golang.org/x/sys/unix"
)

// DefaultDir is where control sockets live by default.
const DefaultDir = "/run/junction"

// maxRequest bounds one request's size: commands are short.
const maxRequest = 64 << 10

// MaxClients bounds the connections served at once. A client beyond it is
// answered at once that the forwarder is busy and its connection closed,
// so that a flood of connections (a script in a loop, clients that never
// send their request) holds at most this many descriptors for long and
// cannot take the process to its descriptor limit.
const MaxClients = 64

// requestTimeout bounds the wait for a client's request.
const requestTimeout = 10 * time.Second

// responseTimeout bounds writing a response: a client that sends a
// command and never reads the answer (a large one fills the socket's
// buffer) gives its slot back. A variable for the tests.
var responseTimeout = 10 * time.Second

// maxAcceptDelay bounds the pause after a failed accept (at the
// descriptor limit: EMFILE, ENFILE), doubling from 5 ms as net/http's
// Server does but capped low, so that a command is answered within a
// tenth of a second once descriptors are free again.
const maxAcceptDelay = 100 * time.Millisecond

// logf reports accept failures (a variable so that tests can read them).
var logf = log.Printf

// DefaultPath is the default socket of a forwarder running the graph file
// config: /run/junction/<base name without extension>.sock ("default" for
// the embedded graph).
func DefaultPath(config string) string {
	name := "default"
	if config != "" {
		base := filepath.Base(config)
		name = strings.TrimSuffix(base, filepath.Ext(base))
	}
	return filepath.Join(DefaultDir, name+".sock")
}

// Request is what a client sends: a command and its arguments, as typed.
type Request struct {
	Cmd  string   `json:"cmd"`
	Args []string `json:"args,omitempty"`
}

// Response is what the server answers: Data on success, else Error (one
// line, saying where the input went wrong) with Usage set when the input
// was malformed rather than the operation failing.
type Response struct {
	Data  json.RawMessage `json:"data,omitempty"`
	Error string          `json:"error,omitempty"`
	Usage bool            `json:"usage,omitempty"`
}

// UsageError marks a handler's error as bad input (a malformed argument,
// an unknown name): clients exit with status 2 for it.
type UsageError struct{ Err error }

func (e *UsageError) Error() string { return e.Err.Error() }
func (e *UsageError) Unwrap() error { return e.Err }

// Usagef returns a UsageError.
func Usagef(format string, args ...any) error {
	return &UsageError{fmt.Errorf(format, args...)}
}

// IsUsage reports whether err is (or wraps) a UsageError.
func IsUsage(err error) bool {
	var u *UsageError
	return errors.As(err, &u)
}

// HandlerFunc runs one command. ctx is cancelled when the client goes away
// or the server closes. The result is encoded as JSON.
type HandlerFunc func(ctx context.Context, args []string) (any, error)

// Server serves registered commands on a unix socket.
type Server struct {
	mu       sync.RWMutex
	handlers map[string]HandlerFunc
	ln       *net.UnixListener
	path     string
	uid      int
	ctx      context.Context
	cancel   context.CancelFunc
	wg       sync.WaitGroup
	slots    chan struct{} // one per connection being served (MaxClients)
}

// NewServer returns a server with no commands.
func NewServer() *Server {
	ctx, cancel := context.WithCancel(context.Background())
	return &Server{handlers: map[string]HandlerFunc{}, uid: os.Getuid(), ctx: ctx, cancel: cancel,
		slots: make(chan struct{}, MaxClients)}
}

// Handle registers (or replaces) the command name.
func (s *Server) Handle(name string, f HandlerFunc) {
	s.mu.Lock()
	s.handlers[name] = f
	s.mu.Unlock()
}

// Commands lists the registered commands, sorted.
func (s *Server) Commands() []string {
	s.mu.RLock()
	defer s.mu.RUnlock()
	names := make([]string, 0, len(s.handlers))
	for n := range s.handlers {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// Listen creates the socket at path (mode 0600; its directory is made if
// missing) and serves it until Close. A stale socket left by a forwarder
// that died is replaced; a live one (another forwarder answers on it) is
// an error.
func (s *Server) Listen(path string) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return fmt.Errorf("control socket: %w", err)
	}
	if fi, err := os.Lstat(path); err == nil {
		if fi.Mode()&os.ModeSocket == 0 {
			return fmt.Errorf("control socket %s: exists and is not a socket", path)
		}
		if c, err := net.DialTimeout("unix", path, time.Second); err == nil {
			c.Close()
			return fmt.Errorf("control socket %s: another forwarder is serving it (give -control PATH)", path)
		}
		os.Remove(path)
	}
	// The socket is made under a umask that leaves it 0600 from the
	// start, not only after the chmod below.
	old := unix.Umask(0o177)
	ln, err := net.ListenUnix("unix", &net.UnixAddr{Name: path, Net: "unix"})
	unix.Umask(old)
	if err != nil {
		return fmt.Errorf("control socket: %w", err)
	}
	if err := os.Chmod(path, 0o600); err != nil {
		ln.Close()
		return fmt.Errorf("control socket: %w", err)
	}
	ln.SetUnlinkOnClose(true)
	s.ln, s.path = ln, path
	s.wg.Add(1)
	go s.serve()
	return nil
}

// Path is the socket's path.
func (s *Server) Path() string { return s.path }

// Close stops serving, cancels running commands, waits for them and
// removes the socket.
func (s *Server) Close() error {
	s.cancel()
	var err error
	if s.ln != nil {
		err = s.ln.Close()
	}
	s.wg.Wait()
	return err
}

// serve accepts until the listener closes. A failed accept (the process
// at its descriptor limit) is retried after a pause rather than ending the
// loop, which left the socket accepting into its backlog with nobody to
// answer until a restart. An episode of failures (failures less than
// episodeGap apart) is logged twice: at its first failure, and at the
// first accept that works again, however often a flood makes accept fail
// and succeed in turn.
func (s *Server) serve() {
	defer s.wg.Done()
	var delay time.Duration
	failed := 0            // in this episode
	var last time.Time     // the last failure
	recoveryLogged := true // no episode yet
	for {
		c, err := s.ln.AcceptUnix()
		if err != nil {
			if errors.Is(err, net.ErrClosed) || s.ctx.Err() != nil {
				return
			}
			now := time.Now()
			if last.IsZero() || now.Sub(last) >= episodeGap {
				failed, recoveryLogged = 0, false
				logf("control socket %s: %v; retrying until descriptors are free", s.path, err)
			}
			failed++
			last = now
			delay = min(max(2*delay, 5*time.Millisecond), maxAcceptDelay)
			t := time.NewTimer(delay)
			select {
			case <-t.C:
			case <-s.ctx.Done():
				t.Stop()
				return
			}
			continue
		}
		delay = 0
		if !recoveryLogged {
			logf("control socket %s: accepting again (%d accepts had failed)", s.path, failed)
			recoveryLogged = true
		}
		select {
		case s.slots <- struct{}{}:
			s.wg.Add(1)
			go func() {
				defer s.wg.Done()
				defer func() { <-s.slots }()
				s.handle(c)
			}()
		default:
			s.busy(c)
		}
	}
}

// episodeGap is how long after the last failure another one starts a new
// episode (new log lines).
const episodeGap = time.Second

// busy answers a client beyond MaxClients and closes its connection, in
// the accept loop: the answer fits in the new socket's empty buffer, and
// the descriptor is given back at once.
func (s *Server) busy(c *net.UnixConn) {
	c.SetWriteDeadline(time.Now().Add(100 * time.Millisecond))
	json.NewEncoder(c).Encode(Response{Error: fmt.Sprintf("control: busy: %d clients are being served (MaxClients); try again", MaxClients)})
	c.Close()
}

// peerUID returns the connecting process's uid (SO_PEERCRED).
func peerUID(c *net.UnixConn) (int, error) {
	raw, err := c.SyscallConn()
	if err != nil {
		return -1, err
	}
	var cred *unix.Ucred
	var cerr error
	if err := raw.Control(func(fd uintptr) {
		cred, cerr = unix.GetsockoptUcred(int(fd), unix.SOL_SOCKET, unix.SO_PEERCRED)
	}); err != nil {
		return -1, err
	}
	if cerr != nil {
		return -1, cerr
	}
	return int(cred.Uid), nil
}

func (s *Server) handle(c *net.UnixConn) {
	defer c.Close()
	enc := json.NewEncoder(c)
	uid, err := peerUID(c)
	if err != nil {
		enc.Encode(Response{Error: "control: reading peer credentials: " + err.Error()})
		return
	}
	if uid != 0 && uid != s.uid {
		enc.Encode(Response{Error: fmt.Sprintf("control: permission denied: uid %d is neither root nor the forwarder's uid %d", uid, s.uid)})
		return
	}
	c.SetReadDeadline(time.Now().Add(requestTimeout))
	var req Request
	if err := json.NewDecoder(io.LimitReader(c, maxRequest)).Decode(&req); err != nil {
		enc.Encode(Response{Error: "control: malformed request: " + err.Error(), Usage: true})
		return
	}
	c.SetReadDeadline(time.Time{})
	s.mu.RLock()
	h := s.handlers[req.Cmd]
	s.mu.RUnlock()
	if h == nil {
		enc.Encode(Response{Error: fmt.Sprintf("unknown command %q (this forwarder serves: %s)", req.Cmd, strings.Join(s.Commands(), ", ")), Usage: true})
		return
	}
	// The command runs until done, the server closes, or the client hangs
	// up (it sends nothing more, so a read returning is a hang-up).
	ctx, cancel := context.WithCancel(s.ctx)
	defer cancel()
	go func() {
		var b [1]byte
		c.Read(b[:])
		cancel()
	}()
	v, err := h(ctx, req.Args)
	var resp Response
	if err != nil {
		resp = Response{Error: err.Error(), Usage: IsUsage(err)}
	} else if data, jerr := json.Marshal(v); jerr != nil {
		resp = Response{Error: "control: encoding the result: " + jerr.Error()}
	} else {
		resp.Data = data
	}
	c.SetWriteDeadline(time.Now().Add(responseTimeout))
	enc.Encode(resp)
}

// Call sends one command to the socket at path and returns its data. A
// response error comes back as an error (a *UsageError when the server
// said the input was malformed).
func Call(ctx context.Context, path, cmd string, args []string) (json.RawMessage, error) {
	var d net.Dialer
	c, err := d.DialContext(ctx, "unix", path)
	if err != nil {
		switch {
		case errors.Is(err, os.ErrNotExist):
			return nil, fmt.Errorf("no forwarder at %s (is it running? give -control PATH)", path)
		case errors.Is(err, unix.ECONNREFUSED):
			// A socket file left by a forwarder that is gone, or a file
			// that is not a socket.
			return nil, fmt.Errorf("no forwarder at %s: nothing listens on it (a socket left behind by a forwarder that has ended, or a file that is not a socket)", path)
		case errors.Is(err, os.ErrPermission):
			return nil, fmt.Errorf("control socket %s: permission denied (only root and the forwarder's own user may use it)", path)
		}
		return nil, fmt.Errorf("control socket %s: %w", path, err)
	}
	defer c.Close()
	stop := context.AfterFunc(ctx, func() { c.Close() })
	defer stop()
	// A server that refuses the peer answers before reading the request:
	// a failed write is followed by reading that answer.
	werr := json.NewEncoder(c).Encode(Request{Cmd: cmd, Args: args})
	var resp Response
	if err := json.NewDecoder(c).Decode(&resp); err != nil {
		if werr != nil {
			return nil, fmt.Errorf("control socket %s: %w", path, werr)
		}
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		return nil, fmt.Errorf("control socket %s: reading the response: %w", path, err)
	}
	if resp.Error != "" {
		if resp.Usage {
			return nil, &UsageError{errors.New(resp.Error)}
		}
		return nil, errors.New(resp.Error)
	}
	return resp.Data, nil
}
