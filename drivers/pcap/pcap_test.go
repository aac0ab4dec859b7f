package pcap

import (
	"bytes"
	"compress/gzip"
	"errors"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/gopacket"
	"github.com/google/gopacket/layers"
	"github.com/google/gopacket/pcapgo"

	"github.com/junction-dataplane/junction/conf"
	"github.com/junction-dataplane/junction/drivers"
	"github.com/junction-dataplane/junction/packet"
)

func openPcap(t testing.TB, cfg Config, ctx drivers.OpenContext) (*Device, error) {
	t.Helper()
	drv, ok := drivers.Lookup("pcap")
	if !ok {
		t.Fatal("pcap driver not registered")
	}
	c := drv.NewConfig().(*Config)
	*c = cfg
	if ctx.Name == "" {
		ctx.Name = "p"
	}
	dev, err := drv.Open(c, ctx)
	if err != nil {
		return nil, err
	}
	d := dev.(*Device)
	t.Cleanup(func() { d.Close() })
	return d, nil
}

func mustOpen(t testing.TB, cfg Config) *Device {
	t.Helper()
	d, err := openPcap(t, cfg, drivers.OpenContext{Index: 2, Workers: 2})
	if err != nil {
		t.Fatal(err)
	}
	return d
}

// lineCounter counts the messages a device logs.
type lineCounter int

func (c *lineCounter) Write(p []byte) (int, error) { *c++; return len(p), nil }

// frames makes n frames of varied lengths (60..1514 bytes) with random
// content, so that any reordering or corruption shows.
func frames(n int, seed uint64) [][]byte {
	r := rand.New(rand.NewPCG(seed, 1))
	out := make([][]byte, n)
	for i := range out {
		f := make([]byte, 60+r.IntN(1514-60+1))
		for j := range f {
			f[j] = byte(r.Uint32())
		}
		out[i] = f
	}
	out[0] = out[0][:60]
	if n > 1 {
		out[1] = append(out[1][:0], make([]byte, 1514)...)
	}
	return out
}

// writeFile writes frames with gopacket directly (an independent writer).
func writeFile(t testing.TB, path string, lt layers.LinkType, frs [][]byte) {
	t.Helper()
	var buf bytes.Buffer
	w := pcapgo.NewWriter(&buf)
	if err := w.WriteFileHeader(65535, lt); err != nil {
		t.Fatal(err)
	}
	for i, f := range frs {
		ci := gopacket.CaptureInfo{Timestamp: time.Unix(int64(i), 0), CaptureLength: len(f), Length: len(f)}
		if err := w.WritePacket(ci, f); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(path, buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
}

// readAll receives until the device drains (or max frames), copying the
// frames and freeing the packets.
func readAll(t *testing.T, d *Device, max int) [][]byte {
	t.Helper()
	var out [][]byte
	b := packet.NewBatch(64)
	for polls := 0; !d.Drained(0) && len(out) < max; polls++ {
		if polls > 100000 {
			t.Fatal("device neither drains nor delivers")
		}
		n := d.Receive(0, b)
		if n != b.Len() {
			t.Fatalf("Receive returned %d, batch holds %d", n, b.Len())
		}
		for _, p := range b.Pkts {
			if p.InDevice != 2 || p.InQueue != 0 || p.L3 != 14 {
				t.Fatalf("annotations: dev %d queue %d L3 %d", p.InDevice, p.InQueue, p.L3)
			}
			out = append(out, bytes.Clone(p.Data))
		}
		b.FreeAll()
	}
	return out
}

func checkNoLeak(t *testing.T, d *Device) {
	t.Helper()
	if d.pool != nil && d.pool.Outstanding() != 0 {
		t.Errorf("%d packets not returned to the pool", d.pool.Outstanding())
	}
}

func stat(d drivers.Device, name string) uint64 {
	for _, c := range d.Stats() {
		if c.Name == name {
			return c.Value
		}
	}
	panic("no stat " + name)
}

// transmit sends frs through d in batches of 64 from alternating workers,
// taking packets from pool.
func transmit(t *testing.T, d *Device, pool *packet.Pool, frs [][]byte) {
	t.Helper()
	b := packet.NewBatch(64)
	w := 0
	for i, f := range frs {
		p := pool.Get()
		if !p.SetFrame(f) {
			t.Fatalf("frame %d does not fit", i)
		}
		b.Add(p)
		if b.Full() || i == len(frs)-1 {
			d.Transmit(w, b)
			if b.Len() != 0 {
				t.Fatal("Transmit left packets in the batch")
			}
			w ^= 1
		}
	}
}

func TestRoundTrip(t *testing.T) {
	dir := t.TempDir()
	frs := frames(300, 1)
	pool := packet.NewPool(64)
	w := mustOpen(t, Config{Write: filepath.Join(dir, "out.pcap")})
	transmit(t, w, pool, frs)
	if pool.Outstanding() != 0 {
		t.Fatalf("Transmit did not free: %d outstanding", pool.Outstanding())
	}
	if !w.Drained(0) || w.RxQueues() != 1 || w.Receive(0, packet.NewBatch(4)) != 0 {
		t.Error("a write-only device must be drained and receive nothing")
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatalf("second Close: %v", err)
	}
	if got := stat(w, "tx_packets"); got != 300 {
		t.Errorf("tx_packets %d", got)
	}
	var total int
	for _, f := range frs {
		total += len(f)
	}
	if got := stat(w, "tx_bytes"); got != uint64(total) {
		t.Errorf("tx_bytes %d, want %d", got, total)
	}

	// gopacket reads the file back on its own.
	f, err := os.Open(filepath.Join(dir, "out.pcap"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	r, err := pcapgo.NewReader(f)
	if err != nil {
		t.Fatal(err)
	}
	if r.LinkType() != layers.LinkTypeEthernet || r.Snaplen() != 65535 {
		t.Errorf("header: link type %v snaplen %d", r.LinkType(), r.Snaplen())
	}
	var prev time.Time
	for i := 0; ; i++ {
		data, ci, err := r.ReadPacketData()
		if err == io.EOF {
			if i != len(frs) {
				t.Errorf("gopacket read %d frames, want %d", i, len(frs))
			}
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(data, frs[i]) || ci.Length != len(frs[i]) {
			t.Fatalf("frame %d differs", i)
		}
		if ci.Timestamp.Before(prev) || time.Since(ci.Timestamp) > time.Minute {
			t.Errorf("frame %d: timestamp %v", i, ci.Timestamp)
		}
		prev = ci.Timestamp
	}

	// And so does a second device.
	rd := mustOpen(t, Config{Read: filepath.Join(dir, "out.pcap")})
	if rd.Drained(0) {
		t.Fatal("drained before reading")
	}
	got := readAll(t, rd, 1000)
	if !reflect.DeepEqual(got, frs) {
		t.Fatalf("read back %d frames, not the %d written (or not in order)", len(got), len(frs))
	}
	if stat(rd, "rx_packets") != 300 || stat(rd, "rx_bytes") != uint64(total) || stat(rd, "read_errors") != 0 {
		t.Errorf("stats: %v", rd.Stats())
	}
	if n := rd.Receive(0, packet.NewBatch(8)); n != 0 {
		t.Errorf("Receive after the end gave %d", n)
	}
	if rd.Receive(1, packet.NewBatch(8)) != 0 || !rd.Drained(1) {
		t.Error("queue 1 does not exist")
	}
	checkNoLeak(t, rd)
}

func TestConcurrentTransmit(t *testing.T) {
	dir := t.TempDir()
	w := mustOpen(t, Config{Write: filepath.Join(dir, "out.pcap")})
	frs := frames(64, 2)
	var wg sync.WaitGroup
	for worker := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			pool := packet.NewPool(64)
			b := packet.NewBatch(64)
			for range 20 {
				for _, f := range frs {
					p := pool.Get()
					p.SetFrame(f)
					b.Add(p)
				}
				w.Transmit(worker, b)
			}
		}()
	}
	wg.Wait()
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	rd := mustOpen(t, Config{Read: filepath.Join(dir, "out.pcap")})
	got := readAll(t, rd, 100000)
	if len(got) != 4*20*64 {
		t.Fatalf("read %d frames, want %d", len(got), 4*20*64)
	}
	// Batches are written whole: each run of 64 is frs in order.
	for i := 0; i < len(got); i += 64 {
		if !reflect.DeepEqual(got[i:i+64], frs) {
			t.Fatalf("batch at %d interleaved with another", i)
		}
	}
}

func TestLoop(t *testing.T) {
	dir := t.TempDir()
	frs := frames(3, 3)
	writeFile(t, filepath.Join(dir, "in.pcap"), layers.LinkTypeEthernet, frs)
	d := mustOpen(t, Config{Read: filepath.Join(dir, "in.pcap"), Loop: true})
	got := readAll(t, d, 200)
	if len(got) < 200 {
		t.Fatalf("loop gave %d frames", len(got))
	}
	for i, f := range got {
		if !bytes.Equal(f, frs[i%3]) {
			t.Fatalf("frame %d is not frame %d of the file", i, i%3)
		}
	}
	if d.Drained(0) || stat(d, "loops") < 60 {
		t.Errorf("drained %v, loops %d", d.Drained(0), stat(d, "loops"))
	}
	checkNoLeak(t, d)
}

func TestLoopGzip(t *testing.T) {
	dir := t.TempDir()
	frs := frames(5, 4)
	plain := filepath.Join(dir, "in.pcap")
	writeFile(t, plain, layers.LinkTypeEthernet, frs)
	raw, _ := os.ReadFile(plain)
	var z bytes.Buffer
	zw := gzip.NewWriter(&z)
	zw.Write(raw)
	zw.Close()
	os.WriteFile(plain+".gz", z.Bytes(), 0o644)
	d := mustOpen(t, Config{Read: plain + ".gz", Loop: true})
	got := readAll(t, d, 23)
	for i, f := range got {
		if !bytes.Equal(f, frs[i%5]) {
			t.Fatalf("frame %d is not frame %d of the file", i, i%5)
		}
	}
	if len(got) < 23 {
		t.Fatalf("got %d frames", len(got))
	}
}

func TestLoopWithoutFrames(t *testing.T) {
	dir := t.TempDir()
	big := make([]byte, 3000)
	for name, frs := range map[string][][]byte{
		"empty":         nil,
		"only oversize": {big, big},
	} {
		t.Run(name, func(t *testing.T) {
			path := filepath.Join(dir, strings.ReplaceAll(name, " ", "_"))
			writeFile(t, path, layers.LinkTypeEthernet, frs)
			d := mustOpen(t, Config{Read: path, Loop: true})
			b := packet.NewBatch(64)
			if n := d.Receive(0, b); n != 0 {
				t.Fatalf("got %d frames", n)
			}
			if !d.Drained(0) {
				t.Fatal("a looped file without frames must drain")
			}
			if got := stat(d, "oversize"); got != uint64(len(frs)) {
				t.Errorf("oversize %d, want %d", got, len(frs))
			}
			checkNoLeak(t, d)
		})
	}
}

func TestOversizeSkipped(t *testing.T) {
	dir := t.TempDir()
	frs := frames(4, 5)
	big := bytes.Repeat([]byte{0xab}, maxFrame+1)
	fit := bytes.Repeat([]byte{0xcd}, maxFrame)
	path := filepath.Join(dir, "in.pcap")
	writeFile(t, path, layers.LinkTypeEthernet, [][]byte{frs[0], big, frs[1], big, big, fit, frs[2]})
	d := mustOpen(t, Config{Read: path})
	got := readAll(t, d, 100)
	want := [][]byte{frs[0], frs[1], fit, frs[2]}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("got %d frames, want the 4 that fit", len(got))
	}
	if stat(d, "oversize") != 3 || stat(d, "read_errors") != 0 {
		t.Errorf("stats %v", d.Stats())
	}
	checkNoLeak(t, d)
}

func TestBrokenFiles(t *testing.T) {
	dir := t.TempDir()
	good := filepath.Join(dir, "good.pcap")
	frs := frames(10, 6)
	writeFile(t, good, layers.LinkTypeEthernet, frs)
	raw, _ := os.ReadFile(good)
	last := 16 + len(frs[9])

	for _, tt := range []struct {
		name    string
		data    []byte
		want    int // frames delivered before the error
		errText string
	}{
		{"truncated in data", raw[:len(raw)-5], 9, "truncated"},
		{"truncated in record header", raw[:len(raw)-last+7], 9, "truncated"},
		{"garbage after frames", append(bytes.Clone(raw), bytes.Repeat([]byte{0xff}, 40)...), 10, "capture length"},
		{"caplen > len", func() []byte {
			b := bytes.Clone(raw)
			b[24+12] = 0 // first record's original length low byte (little endian)
			b[24+13] = 0
			return b
		}(), 0, "exceeds original"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			path := filepath.Join(dir, strings.ReplaceAll(tt.name, " ", "_"))
			os.WriteFile(path, tt.data, 0o644)
			for _, loop := range []bool{false, true} {
				var logs lineCounter
				d, err := openPcap(t, Config{Read: path, Loop: loop}, drivers.OpenContext{Index: 2, Workers: 2, Log: &logs})
				if err != nil {
					t.Fatal(err)
				}
				got := readAll(t, d, 100)
				for range 3 {
					d.Receive(0, packet.NewBatch(8))
				}
				if logs != 1 {
					t.Errorf("logged %d times, want once", logs)
				}
				if len(got) != tt.want {
					t.Fatalf("loop %v: %d frames before the error, want %d", loop, len(got), tt.want)
				}
				for i := range got {
					if !bytes.Equal(got[i], frs[i]) {
						t.Fatalf("frame %d before the error differs", i)
					}
				}
				if !d.Drained(0) || stat(d, "read_errors") != 1 {
					t.Fatalf("drained %v, read_errors %d", d.Drained(0), stat(d, "read_errors"))
				}
				if err := d.ReadError(); err == nil || !strings.Contains(err.Error(), tt.errText) {
					t.Fatalf("ReadError %v, want one saying %q", err, tt.errText)
				}
				if d.Receive(0, packet.NewBatch(8)) != 0 {
					t.Fatal("Receive after the error")
				}
				checkNoLeak(t, d)
			}
		})
	}
}

func TestOpenErrors(t *testing.T) {
	dir := t.TempDir()
	good := filepath.Join(dir, "good.pcap")
	writeFile(t, good, layers.LinkTypeEthernet, frames(2, 7))
	sll := filepath.Join(dir, "sll.pcap")
	writeFile(t, sll, layers.LinkTypeLinuxSLL, frames(2, 7))
	text := filepath.Join(dir, "notes.txt")
	os.WriteFile(text, []byte("hello, this is not a capture\n"), 0o644)
	empty := filepath.Join(dir, "empty.pcap")
	os.WriteFile(empty, nil, 0o644)
	short := filepath.Join(dir, "short.pcap")
	os.WriteFile(short, []byte{0xd4, 0xc3, 0xb2, 0xa1, 2, 0}, 0o644)
	ng := filepath.Join(dir, "x.pcapng")
	os.WriteFile(ng, []byte{0x0a, 0x0d, 0x0d, 0x0a, 0x1c, 0, 0, 0, 0x4d, 0x3c, 0x2b, 0x1a}, 0o644)

	for _, tt := range []struct {
		name string
		cfg  Config
		key  string // "" for an error not tied to one key
		want []string
	}{
		{"neither", Config{}, "", []string{`"read", "write" or both`}},
		{"loop without read", Config{Loop: true, Write: filepath.Join(dir, "o.pcap")}, "loop", []string{"read"}},
		{"missing", Config{Read: filepath.Join(dir, "nope.pcap")}, "read", []string{filepath.Join(dir, "nope.pcap"), "no such file"}},
		{"text", Config{Read: text}, "read", []string{text, "not a pcap file"}},
		{"empty", Config{Read: empty}, "read", []string{empty, "empty file"}},
		{"short", Config{Read: short}, "read", []string{short, "not a pcap file"}},
		{"pcapng", Config{Read: ng}, "read", []string{ng, "pcapng is not supported"}},
		{"link type", Config{Read: sll}, "read", []string{sll, "link type", "only Ethernet"}},
		{"directory", Config{Read: dir}, "read", []string{dir}},
		{"write dir missing", Config{Write: filepath.Join(dir, "no", "out.pcap")}, "write", []string{filepath.Join(dir, "no", "out.pcap")}},
		{"write over read", Config{Read: good, Write: good}, "write", []string{good, "also the read file"}},
		{"write over read, other spelling", Config{Read: good, Write: dir + "/./good.pcap"}, "write", []string{"also the read file"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			_, err := openPcap(t, tt.cfg, drivers.OpenContext{Workers: 1})
			if err == nil {
				t.Fatal("no error")
			}
			var ke *conf.KeyError
			if tt.key != "" && (!errors.As(err, &ke) || ke.Key != tt.key || !strings.Contains(err.Error(), `key "`+tt.key+`"`)) {
				t.Fatalf("error %q does not name key %q", err, tt.key)
			}
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not say %q", err, w)
				}
			}
		})
	}
	// The read file survives a refused write over it.
	if st, err := os.Stat(good); err != nil || st.Size() == 0 {
		t.Errorf("read file damaged: %v %v", st, err)
	}
	drv, _ := drivers.Lookup("pcap")
	if _, err := drv.Open(struct{}{}, drivers.OpenContext{}); err == nil {
		t.Error("a foreign config type must be refused")
	}
}

func TestRelativePaths(t *testing.T) {
	dir := t.TempDir()
	os.Mkdir(filepath.Join(dir, "sub"), 0o755)
	frs := frames(5, 8)
	writeFile(t, filepath.Join(dir, "sub", "in.pcap"), layers.LinkTypeEthernet, frs)
	d, err := openPcap(t, Config{Read: "sub/in.pcap", Write: "sub/out.pcap"}, drivers.OpenContext{Index: 2, Workers: 1, BaseDir: dir})
	if err != nil {
		t.Fatal(err)
	}
	got := readAll(t, d, 10)
	if !reflect.DeepEqual(got, frs) {
		t.Fatal("frames differ")
	}
	// Send them back out through the same device.
	pool := packet.NewPool(8)
	transmit(t, d, pool, got)
	if err := d.Close(); err != nil {
		t.Fatal(err)
	}
	r := mustOpen(t, Config{Read: filepath.Join(dir, "sub", "out.pcap")})
	if back := readAll(t, r, 10); !reflect.DeepEqual(back, frs) {
		t.Fatal("written frames differ")
	}
	// Without BaseDir a relative path is relative to the working directory.
	if _, err := openPcap(t, Config{Read: "sub/in.pcap"}, drivers.OpenContext{}); err == nil {
		t.Error("relative path found without BaseDir")
	}
}

func TestTransmitWithoutWrite(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "in.pcap"), layers.LinkTypeEthernet, frames(1, 9))
	d := mustOpen(t, Config{Read: filepath.Join(dir, "in.pcap")})
	pool := packet.NewPool(8)
	transmit(t, d, pool, frames(5, 9))
	if pool.Outstanding() != 0 || stat(d, "tx_dropped") != 5 || stat(d, "tx_packets") != 0 {
		t.Errorf("outstanding %d, stats %v", pool.Outstanding(), d.Stats())
	}
	if err := d.Flush(); err != nil {
		t.Error(err)
	}
	// After Close, transmitting still frees.
	w := mustOpen(t, Config{Write: filepath.Join(dir, "o.pcap")})
	w.Close()
	transmit(t, w, pool, frames(3, 9))
	if pool.Outstanding() != 0 || stat(w, "tx_dropped") != 3 {
		t.Errorf("after close: outstanding %d, stats %v", pool.Outstanding(), w.Stats())
	}
}

func TestPoolEmptyLosesNothing(t *testing.T) {
	dir := t.TempDir()
	frs := frames(PoolSize+10, 10)
	path := filepath.Join(dir, "in.pcap")
	writeFile(t, path, layers.LinkTypeEthernet, frs)
	d := mustOpen(t, Config{Read: path})
	var held []*packet.Batch
	for {
		b := packet.NewBatch(64)
		if d.Receive(0, b) == 0 {
			break
		}
		held = append(held, b)
	}
	if d.pool.Outstanding() != PoolSize || stat(d, "rx_pool_empty") == 0 || d.Drained(0) {
		t.Fatalf("outstanding %d, stats %v", d.pool.Outstanding(), d.Stats())
	}
	var got [][]byte
	for _, b := range held {
		for _, p := range b.Pkts {
			got = append(got, bytes.Clone(p.Data))
		}
		b.FreeAll()
	}
	got = append(got, readAll(t, d, 100)...)
	if len(got) != len(frs) {
		t.Fatalf("%d frames, want %d", len(got), len(frs))
	}
	for i := range got {
		if !bytes.Equal(got[i], frs[i]) {
			t.Fatalf("frame %d differs", i)
		}
	}
	checkNoLeak(t, d)
}

func TestInfoAndDoc(t *testing.T) {
	dir := t.TempDir()
	mac := packet.MAC{2, 0, 0, 0, 0, 9}
	d, err := openPcap(t, Config{Write: filepath.Join(dir, "o.pcap")}, drivers.OpenContext{Name: "lan", MAC: mac})
	if err != nil {
		t.Fatal(err)
	}
	if i := d.Info(); i.Name != "lan" || i.Driver != "pcap" || i.MAC != mac {
		t.Errorf("Info %+v", i)
	}
	drv, _ := drivers.Lookup("pcap")
	if err := drivers.CheckDoc(drv); err != nil {
		t.Error(err)
	}
	for _, c := range d.Stats() {
		if !strings.Contains(drv.Doc.Stats, c.Name) {
			t.Errorf("the manual's stats do not mention counter %q", c.Name)
		}
	}
}

func TestZeroAllocs(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "in.pcap")
	writeFile(t, path, layers.LinkTypeEthernet, frames(100, 11))
	rd := mustOpen(t, Config{Read: path, Loop: true})
	wr := mustOpen(t, Config{Write: filepath.Join(dir, "out.pcap")})
	b := packet.NewBatch(64)
	rd.Receive(0, b) // the reader allocates its frame buffer once
	wr.Transmit(0, b)
	allocs := testing.AllocsPerRun(100, func() {
		rd.Receive(0, b)
		wr.Transmit(0, b)
	})
	if allocs != 0 {
		t.Errorf("%v allocations per Receive+Transmit", allocs)
	}
	if stat(rd, "loops") == 0 {
		t.Error("the run did not cover a rewind")
	}
	checkNoLeak(t, rd)
}

// BenchmarkReceiveTransmit replays a file of 64-byte frames in loop mode
// and writes every frame to /dev/null, at batch 64.
func BenchmarkReceiveTransmit(b *testing.B) {
	for _, size := range []int{64, 1514} {
		b.Run(map[int]string{64: "64B", 1514: "1514B"}[size], func(b *testing.B) {
			dir := b.TempDir()
			path := filepath.Join(dir, "in.pcap")
			frs := make([][]byte, 1000)
			for i := range frs {
				frs[i] = make([]byte, size)
				frs[i][0] = byte(i)
			}
			writeFile(b, path, layers.LinkTypeEthernet, frs)
			rd := mustOpen(b, Config{Read: path, Loop: true})
			wr := mustOpen(b, Config{Write: os.DevNull})
			batch := packet.NewBatch(64)
			rd.Receive(0, batch)
			wr.Transmit(0, batch)
			b.ReportAllocs()
			pkts := 0
			for b.Loop() {
				pkts += rd.Receive(0, batch)
				wr.Transmit(0, batch)
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(max(pkts, 1)), "ns/pkt")
			b.SetBytes(int64(size) * 64)
		})
	}
}

// FuzzRead feeds arbitrary bytes after a valid pcap header: the reader must
// never panic, never loop without progress, and return every buffer.
func FuzzRead(f *testing.F) {
	poolSize = 256
	defer func() { poolSize = PoolSize }()
	var buf bytes.Buffer
	w := pcapgo.NewWriter(&buf)
	w.WriteFileHeader(65535, layers.LinkTypeEthernet)
	for _, fr := range frames(3, 12) {
		w.WritePacket(gopacket.CaptureInfo{CaptureLength: len(fr), Length: len(fr), Timestamp: time.Unix(1, 0)}, fr)
	}
	f.Add(buf.Bytes()[24:], false)
	f.Add(buf.Bytes()[24:100], true)
	f.Add([]byte{}, true)
	f.Add(bytes.Repeat([]byte{0xff}, 32), false)
	dir := f.TempDir()
	f.Fuzz(func(t *testing.T, body []byte, loop bool) {
		path := filepath.Join(dir, "fuzz.pcap")
		if err := os.WriteFile(path, append(bytes.Clone(buf.Bytes()[:24]), body...), 0o644); err != nil {
			t.Fatal(err)
		}
		d, err := openPcap(t, Config{Read: path, Loop: loop}, drivers.OpenContext{})
		if err != nil {
			t.Fatal(err)
		}
		defer d.Close()
		b := packet.NewBatch(64)
		// Each record takes at least its 16-byte header.
		limit := len(body)/16/64 + 2
		for i := 0; i < limit && !d.Drained(0); i++ {
			d.Receive(0, b)
			for _, p := range b.Pkts {
				if len(p.Data) > maxFrame {
					t.Fatal("oversize frame delivered")
				}
			}
			b.FreeAll()
		}
		if !loop && !d.Drained(0) {
			t.Fatal("a finite file did not drain after all its records")
		}
		checkNoLeak(t, d)
	})
}
