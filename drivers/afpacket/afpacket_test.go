package afpacket

import (
	"bytes"
	"errors"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/junction-dataplane/junction/conf"
	"github.com/junction-dataplane/junction/drivers"
	"github.com/junction-dataplane/junction/drivers/internal/drvtest"
	"github.com/junction-dataplane/junction/internal/netns"
	"github.com/junction-dataplane/junction/packet"
)

func openIn(t testing.TB, ns *netns.NS, c *Config, workers int) (*Device, error) {
	t.Helper()
	var d *Device
	err := ns.Do(func() error {
		var err error
		d, err = Open(c, drivers.OpenContext{Name: "dut", Workers: workers, Batch: 64})
		return err
	})
	if d != nil {
		t.Cleanup(func() { d.Close() })
	}
	return d, err
}

func cfg(ifname string) *Config {
	c := newConfig().(*Config)
	c.Interface = ifname
	return c
}

func TestValidate(t *testing.T) {
	for _, tc := range []struct {
		name string
		mod  func(*Config)
		key  string
	}{
		{"no interface", func(c *Config) { c.Interface = "" }, "interface"},
		{"queues", func(c *Config) { c.Queues = 65 }, "queues"},
		{"frames", func(c *Config) { c.Frames = 1000 }, "frames"},
		{"frames < block", func(c *Config) { c.Frames = 256 }, "frames"},
		{"block", func(c *Config) { c.BlockSize = 1000 }, "block_size"},
		{"ok", func(c *Config) {}, ""},
	} {
		c := cfg("eth0")
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

func TestMissingInterface(t *testing.T) {
	netns.RequireRoot(t)
	ns := netns.New(t).NS("perr")
	_, err := openIn(t, ns, cfg("nosuch0"), 1)
	var ke *conf.KeyError
	if !errors.As(err, &ke) || ke.Key != "interface" || !strings.Contains(err.Error(), `"nosuch0"`) {
		t.Errorf("missing interface: %v", err)
	}
}

func TestRxTx(t *testing.T) {
	pr := drvtest.NewPair(t, 1)
	d, err := openIn(t, pr.DevNS, cfg(pr.DevIf), 1)
	if err != nil {
		t.Fatal(err)
	}
	if mac := d.Info().MAC; !bytes.Equal(mac[:], pr.DevMAC) {
		t.Errorf("MAC %v, want %v", mac, pr.DevMAC)
	}
	const n = 300
	raw := drvtest.ReceiveAll(t, pr, d, n)
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
	peer := drvtest.PeerCollect(raw, len(out), 3*time.Second)
	for i, f := range out {
		if !bytes.Equal(peer[uint32(1000+i)], f) {
			t.Fatalf("peer frame %d: got %x want %x", i, peer[uint32(1000+i)], f)
		}
	}
	// What the device sent is not received back.
	if again, _ := drvtest.Collect(d, []int{0}, 1, 50*time.Millisecond); len(again) != 0 {
		t.Errorf("device received %d of its own frames", len(again))
	}
	if pool.Outstanding() != 0 {
		t.Errorf("%d packets not freed", pool.Outstanding())
	}
	st := map[string]uint64{}
	for _, c := range d.Stats() {
		st[c.Name] = c.Value
	}
	if st["rx_packets"] != n || st["tx_packets"] != 200 || st["tx_dropped"] != 0 {
		t.Errorf("stats %v", st)
	}
	if err := d.Close(); err != nil {
		t.Fatal(err)
	}
}

// TestTxSndBuf: each transmit socket has the send buffer txSndBuf asks
// for (doubled by the kernel), room for many batches of full-size
// frames, so that frames the peer's backlog has not taken yet do not
// make sendmmsg fail with EAGAIN and the batch's rest be dropped
// (ring.go). Run as root: SO_SNDBUFFORCE.
func TestTxSndBuf(t *testing.T) {
	pr := drvtest.NewPair(t, 1)
	d, err := openIn(t, pr.DevNS, cfg(pr.DevIf), 2)
	if err != nil {
		t.Fatal(err)
	}
	if len(d.tx) != 2 {
		t.Fatalf("%d transmit sockets, want one per worker (2)", len(d.tx))
	}
	for i, tx := range d.tx {
		n, err := unix.GetsockoptInt(tx.fd, unix.SOL_SOCKET, unix.SO_SNDBUF)
		if err != nil {
			t.Fatal(err)
		}
		if n < 2*txSndBuf {
			t.Errorf("transmit socket %d: SO_SNDBUF %d, want %d (txSndBuf doubled)", i, n, 2*txSndBuf)
		}
	}
	// A burst of full batches of full-size frames all leaves.
	pool := packet.NewPool(packet.MaxBatch)
	for r := 0; r < 20; r++ {
		var out [][]byte
		for i := 0; i < packet.MaxBatch; i++ {
			out = append(out, drvtest.Frame(pr.PeerMAC, pr.DevMAC, i, uint32(r*packet.MaxBatch+i), 1500))
		}
		d.Transmit(0, drvtest.Batch(pool, out))
	}
	st := map[string]uint64{}
	for _, c := range d.Stats() {
		st[c.Name] = c.Value
	}
	if st["tx_packets"] != 20*packet.MaxBatch || st["tx_dropped"] != 0 {
		t.Errorf("tx_packets %d (want %d), tx_dropped %d", st["tx_packets"], 20*packet.MaxBatch, st["tx_dropped"])
	}
}
