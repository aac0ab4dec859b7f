package afxdp

import (
	"bytes"
	"errors"
	"io"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/junction-dataplane/junction/conf"
	"github.com/junction-dataplane/junction/drivers"
	"github.com/junction-dataplane/junction/drivers/internal/drvtest"
	"github.com/junction-dataplane/junction/internal/netns"
	"github.com/junction-dataplane/junction/packet"
)

func drvOpenCtx() drivers.OpenContext {
	return drivers.OpenContext{Name: "dut", Workers: 1, Batch: 64}
}

func openIn(t testing.TB, ns *netns.NS, c *Config, workers int) (*Device, error) {
	t.Helper()
	return openLogged(t, ns, c, workers, nil)
}

// openLogged is openIn with the device's messages written to log.
func openLogged(t testing.TB, ns *netns.NS, c *Config, workers int, log io.Writer) (*Device, error) {
	t.Helper()
	var d *Device
	err := ns.Do(func() error {
		var err error
		d, err = Open(c, drivers.OpenContext{Name: "dut", Workers: workers, Batch: 64, Log: log})
		return err
	})
	if d != nil {
		t.Cleanup(func() { d.Close() })
	}
	return d, err
}

// logBuffer collects what devices log, for tests to read while the
// devices' goroutines write.
type logBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *logBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *logBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

func (l *logBuffer) Reset() {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.b.Reset()
}

// devLog is the log of device name on interface ifname, written to l.
func (l *logBuffer) devLog(name, ifname string) opLog {
	return newOpLog(drivers.OpenContext{Name: name, Log: l}, "afxdp", ifname)
}

func cfg(ifname, mode string) *Config {
	c := newConfig().(*Config)
	c.Interface, c.Mode = ifname, mode
	return c
}

func xdpAttached(t testing.TB, ns *netns.NS, ifname string) bool {
	t.Helper()
	return strings.Contains(ns.MustRun("ip", "link", "show", "dev", ifname), "xdp")
}

func TestValidate(t *testing.T) {
	for _, tc := range []struct {
		name string
		mod  func(*Config)
		key  string
	}{
		{"no interface", func(c *Config) { c.Interface = "" }, "interface"},
		{"long interface", func(c *Config) { c.Interface = "abcdefghijklmnop" }, "interface"},
		{"bad mode", func(c *Config) { c.Mode = "zerocopy" }, "mode"},
		{"ring not pow2", func(c *Config) { c.Ring = 1000 }, "ring"},
		{"ring small", func(c *Config) { c.Ring = 32 }, "ring"},
		{"frames not pow2", func(c *Config) { c.Frames = 3000 }, "frames"},
		{"frames < 2 ring", func(c *Config) { c.Frames, c.Ring = 1024, 1024 }, "frames"},
		{"negative queues", func(c *Config) { c.Queues = -1 }, "queues"},
		{"bad local_rate", func(c *Config) { c.LocalRate = "fast" }, "local_rate"},
		{"local_rate 0", func(c *Config) { c.LocalRate = "0/s" }, "local_rate"},
		{"local_burst negative", func(c *Config) { c.LocalBurst = -1 }, "local_burst"},
		{"local_rate off", func(c *Config) { c.LocalRate = "off" }, ""},
		{"local_rate 5000/s", func(c *Config) { c.LocalRate = "5000/s" }, ""},
		{"ok", func(c *Config) {}, ""},
	} {
		c := cfg("eth0", "auto")
		tc.mod(c)
		err := c.Validate()
		var ke *conf.KeyError
		switch {
		case tc.key == "" && err != nil:
			t.Errorf("%s: %v", tc.name, err)
		case tc.key != "" && (!errors.As(err, &ke) || ke.Key != tc.key):
			t.Errorf("%s: err = %v, want key %q", tc.name, err, tc.key)
		}
	}
}

func TestOpenErrors(t *testing.T) {
	netns.RequireRoot(t)
	env := netns.New(t)
	ns := env.NS("xerr")
	// A missing interface: the error names the key and the interface.
	_, err := openIn(t, ns, cfg("nosuch0", "auto"), 1)
	var ke *conf.KeyError
	if !errors.As(err, &ke) || ke.Key != "interface" || !strings.Contains(err.Error(), `"nosuch0"`) {
		t.Errorf("missing interface: %v", err)
	}
	// lo has no native XDP: mode native fails on the mode key, and
	// leaves nothing attached.
	_, err = openIn(t, ns, cfg("lo", "native"), 1)
	if !errors.As(err, &ke) || ke.Key != "mode" || !strings.Contains(err.Error(), "native") {
		t.Errorf("native on lo: %v", err)
	}
	if xdpAttached(t, ns, "lo") {
		t.Error("program left on lo after a failed Open")
	}
	// More queues than the interface has.
	c := cfg("lo", "generic")
	c.Queues = 8
	_, err = openIn(t, ns, c, 1)
	if !errors.As(err, &ke) || ke.Key != "queues" {
		t.Errorf("too many queues: %v", err)
	}
	// A bad mode through the driver registry's Open.
	drv, _ := drivers.Lookup("afxdp")
	if _, err := drv.Open(cfg("lo", "fast"), drivers.OpenContext{}); !errors.As(err, &ke) || ke.Key != "mode" {
		t.Errorf("bad mode: %v", err)
	}
}

// TestRxTx receives frames the peer sends, sends frames to the peer (by
// copy and, for received packets, from their own frames) and checks that
// Close leaves no program.
func TestRxTx(t *testing.T) {
	for _, mode := range []string{"generic", "native"} {
		t.Run(mode, func(t *testing.T) {
			pr := drvtest.NewPair(t, 1)
			d, err := openIn(t, pr.DevNS, cfg(pr.DevIf, mode), 1)
			if err != nil {
				t.Fatal(err)
			}
			if d.Mode != mode || d.RxQueues() != 1 {
				t.Fatalf("mode %s, queues %d", d.Mode, d.RxQueues())
			}
			if mac := d.Info().MAC; !bytes.Equal(mac[:], pr.DevMAC) {
				t.Errorf("Info().MAC = %v, want %v", d.Info().MAC, pr.DevMAC)
			}
			if !xdpAttached(t, pr.DevNS, pr.DevIf) {
				t.Fatal("no XDP program attached after Open")
			}
			const n = 300
			raw := drvtest.ReceiveAll(t, pr, d, n)

			// TX by copy, from a pool of our own.
			pool := packet.NewPool(256)
			var out [][]byte
			for i := 0; i < 200; i++ {
				out = append(out, drvtest.Frame(pr.PeerMAC, pr.DevMAC, i, uint32(1000+i), 64+i))
			}
			for i := 0; i < len(out); i += 50 {
				b := drvtest.Batch(pool, out[i:i+50])
				d.Transmit(0, b)
				if b.Len() != 0 {
					t.Fatal("Transmit left packets in the batch")
				}
			}
			// TX without copy: echo what we receive, rewritten.
			for i := 0; i < 50; i++ {
				raw.Send(drvtest.Frame(pr.DevMAC, pr.PeerMAC, i, uint32(2000+i), 100))
			}
			echoed := 0
			b := packet.NewBatch(64)
			deadline := time.Now().Add(3 * time.Second)
			for echoed < 50 && time.Now().Before(deadline) {
				if d.Receive(0, b) == 0 {
					time.Sleep(100 * time.Microsecond)
				}
				for _, p := range b.Pkts {
					copy(p.Data[0:6], pr.PeerMAC)
					copy(p.Data[6:12], pr.DevMAC)
				}
				echoed += b.Len()
				d.Transmit(0, b)
			}
			// A worker would go on polling, which kicks the TX ring; Flush
			// does the same here.
			if err := d.Flush(); err != nil {
				t.Fatal(err)
			}
			peer := drvtest.PeerCollect(raw, 250, 3*time.Second)
			for i, f := range out {
				if !bytes.Equal(peer[uint32(1000+i)], f) {
					t.Fatalf("peer frame %d: got %x want %x", 1000+i, peer[uint32(1000+i)], f)
				}
			}
			zc := 0
			for s := range peer {
				if s >= 2000 {
					zc++
				}
			}
			if zc != 50 {
				t.Errorf("peer got %d of 50 echoed frames", zc)
			}
			st := drvtest.Counters(d)
			if st["rx_packets"] < n+50 || st["tx_packets"] != 250 || st["tx_dropped"] != 0 {
				t.Errorf("stats %v", st)
			}
			if pool.Outstanding() != 0 {
				t.Errorf("%d packets of the sender's pool not freed", pool.Outstanding())
			}
			for _, q := range d.queues {
				if q.tx.Outstanding() != 0 || q.txOut != 0 {
					t.Errorf("TX frames still out: %d / %d", q.tx.Outstanding(), q.txOut)
				}
			}
			if err := d.Close(); err != nil {
				t.Fatal(err)
			}
			if xdpAttached(t, pr.DevNS, pr.DevIf) {
				t.Fatal("XDP program left after Close")
			}
		})
	}
}
