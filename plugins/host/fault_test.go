package host_test

import (
	"bytes"
	"fmt"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/junction-dataplane/junction/elements/elementtest"
	"github.com/junction-dataplane/junction/plugins/host"
)

// syncBuf is a log sink safe for the supervisor goroutines.
type syncBuf struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuf) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuf) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

func testFrames(n int) [][]byte {
	out := make([][]byte, n)
	for i := range out {
		out[i] = bytes.Repeat([]byte{byte(2 * i)}, 60+i) // even first byte
	}
	return out
}

// TestFaults makes the plugin crash, panic, exit, hang and lie, and kills
// it from outside: each time the failing batch gets on_failure, the event is
// counted and logged, no Push blocks longer than the timeout, and the
// plugin is back (a batch processed by it) within a second.
func TestFaults(t *testing.T) {
	logs := &syncBuf{}
	host.SetLog(logs)
	cases := []struct {
		mode, policy, counter, log string
	}{
		{"panic", "bypass", "crashes", "deliberate panic"},
		{"exit", "drop", "crashes", "exited"},
		{"kill", "bypass", "crashes", "exited"},
		{"sleep", "drop", "timeouts", "did not answer within"},
		{"badport", "bypass", "garbage", "output port 0x7"},
		{"badlen", "drop", "garbage", "beyond its buffer"},
	}
	for _, c := range cases {
		t.Run(c.mode+"/"+c.policy, func(t *testing.T) {
			mode := c.mode
			if mode == "kill" {
				mode = "ok"
			}
			timeout := 150 * time.Millisecond
			cfg := &host.Config{Path: pluginPath("faulty"), Element: "Faulty", OnFailure: c.policy, Timeout: timeout,
				Config: map[string]any{"mode": mode, "after": int64(3)}}
			h := elementtest.New(t, "Plugin", cfg, &elementtest.Options{PoolSize: 512})
			x := h.Element.(*host.Instance)
			frames := testFrames(8)
			for i := 0; i < 3; i++ {
				h.Push(0, frames...)
			}
			if got := len(h.Outs[0].Frames()); got != 24 {
				t.Fatalf("before the fault: %d frames on output 0, want 24", got)
			}
			pid := x.PID()
			if pid == 0 {
				t.Fatal("plugin not up")
			}
			if c.mode == "kill" {
				if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
					t.Fatal(err)
				}
				time.Sleep(20 * time.Millisecond)
			}
			t0 := time.Now()
			h.Push(0, frames...) // the failing batch
			if d := time.Since(t0); d > timeout+100*time.Millisecond {
				t.Errorf("failing batch took %v (timeout %v)", d, timeout)
			}
			if h.Counter(c.counter) != 1 {
				t.Errorf("%s = %d, want 1 (counters %v)", c.counter, h.Counter(c.counter), h.Stats.Counters())
			}
			if c.policy == "bypass" {
				outs := h.Outs[0].Frames()
				if len(outs) != 32 || h.Counter("bypassed") != 8 {
					t.Fatalf("bypass: %d frames on output 0 (want 32), bypassed %d", len(outs), h.Counter("bypassed"))
				}
				for i, f := range outs[24:] {
					if !bytes.Equal(f, frames[i]) {
						t.Fatalf("bypassed frame %d changed", i)
					}
				}
			} else if h.Counter("plugin failure") != 8 {
				t.Fatalf("drop: plugin failure = %d, want 8", h.Counter("plugin failure"))
			}
			// Back within a second: a batch processed by the plugin again.
			failed := func() uint64 { return h.Counter("bypassed") + h.Counter("plugin failure") }
			for {
				before := failed()
				t1 := time.Now()
				h.Push(0, frames...)
				if d := time.Since(t1); d > 50*time.Millisecond {
					t.Fatalf("a push while the plugin is down took %v: the worker stalled", d)
				}
				if failed() == before {
					break
				}
				if time.Since(t0) > time.Second {
					t.Fatalf("plugin not back after %v (counters %v)\nlog:\n%s", time.Since(t0), h.Stats.Counters(), logs.String())
				}
				time.Sleep(2 * time.Millisecond)
			}
			t.Logf("back after %v", time.Since(t0))
			if h.Counter("restarts") != 1 {
				t.Errorf("restarts = %d, want 1", h.Counter("restarts"))
			}
			if np := x.PID(); np == pid || np == 0 {
				t.Errorf("pid %d after restart, was %d", np, pid)
			}
			if !strings.Contains(logs.String(), c.log) {
				t.Errorf("log lacks %q:\n%s", c.log, logs.String())
			}
			h.Reset()
			h.CheckNoLeak()
		})
	}
}

// TestPluginDiesWhileIdle: a plugin killed between batches is restarted
// before the next batch needs it (the worker's Tick notices).
func TestPluginDiesWhileIdle(t *testing.T) {
	host.SetLog(&syncBuf{})
	cfg := &host.Config{Path: pluginPath("faulty"), Element: "Faulty", OnFailure: "drop", Timeout: slackTimeout,
		Config: map[string]any{"mode": "ok"}}
	h := elementtest.New(t, "Plugin", cfg, &elementtest.Options{PoolSize: 512})
	x := h.Element.(*host.Instance)
	pid := x.PID()
	syscall.Kill(pid, syscall.SIGKILL)
	// A restart is a fork, an exec and a handshake: milliseconds on an
	// idle machine, seconds on a loaded one. The poll ends when it is done.
	deadline := time.Now().Add(10 * time.Second)
	for {
		x.Tick(0)
		if np := x.PID(); np != 0 && np != pid {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("not restarted within 10s: %v", h.Stats.Counters())
		}
		time.Sleep(time.Millisecond)
	}
	h.Push(0, testFrames(4)...)
	if n := len(h.Outs[0].Frames()); n != 4 || h.Counter("plugin failure") != 0 {
		t.Fatalf("after an idle restart: %d frames out, %d failed", n, h.Counter("plugin failure"))
	}
	if h.Counter("crashes") != 1 {
		t.Errorf("crashes = %d", h.Counter("crashes"))
	}
}

// TestMangle checks the SDK's semantics against a model: drops with a
// declared reason, bytes changed in place, lengths changed, ports chosen.
func TestMangle(t *testing.T) {
	cfg := &host.Config{Path: pluginPath("faulty"), Element: "Mangle", OnFailure: "drop", Timeout: slackTimeout,
		Config: map[string]any{"min": int64(30), "trim": int64(3)}}
	h := elementtest.New(t, "Plugin", cfg, &elementtest.Options{PoolSize: 1024})
	var frames [][]byte
	for i := 0; i < 64; i++ {
		f := make([]byte, 10+i*7)
		for j := range f {
			f[j] = byte(i + j)
		}
		frames = append(frames, f)
	}
	h.Push(0, frames...)
	var want [2][][]byte
	short := 0
	for _, f := range frames {
		if len(f) < 30 {
			short++
			continue
		}
		g := append([]byte(nil), f...)
		g[len(g)-1] ^= 0xff
		g = g[:len(g)-3]
		want[g[0]&1] = append(want[g[0]&1], g)
	}
	for port := 0; port < 2; port++ {
		got := h.Outs[port].Frames()
		if fmt.Sprint(got) != fmt.Sprint(want[port]) {
			t.Errorf("port %d: got %d frames, want %d (first differs: %v)", port, len(got), len(want[port]), len(got) > 0)
		}
	}
	if h.Counter("too short") != uint64(short) || short == 0 {
		t.Errorf("too short = %d, want %d", h.Counter("too short"), short)
	}
	h.Reset()
	h.CheckNoLeak()
}
