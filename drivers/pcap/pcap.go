package pcap

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"

	"github.com/google/gopacket"
	"github.com/google/gopacket/layers"
	"github.com/google/gopacket/pcapgo"

	"github.com/junction-dataplane/junction/conf"
	"github.com/junction-dataplane/junction/drivers"
	"github.com/junction-dataplane/junction/internal/safefile"
	"github.com/junction-dataplane/junction/packet"
)

const (
	// PoolSize is the number of packets in the RX pool (made only when the
	// device reads). A pcap device is a test and replay device, so it needs
	// fewer buffers than gen: enough for what a graph holds at once.
	PoolSize = 4096
	// Snaplen is written in the header of every file the device writes.
	Snaplen = 65535
	// maxCapture bounds the captured length the reader accepts (tcpdump's
	// MAXIMUM_SNAPLEN). Files whose header promises a smaller snaplen are
	// read with this bound anyway, since some writers do not enforce theirs;
	// a larger length is taken as garbage rather than allocated.
	maxCapture = 262144
	// ioBuffer is the size of the read and write buffers.
	ioBuffer = 1 << 16
	// pcapHeaderLen is the size of the pcap file header; packet records
	// start right after it.
	pcapHeaderLen = 24
	// maxFrame is the largest frame a packet buffer holds.
	maxFrame = packet.BufSize - packet.Headroom
)

func init() {
	drivers.Register(drivers.Driver{
		Name:      "pcap",
		NewConfig: func() any { return &Config{} },
		Open:      open,
		Doc:       manual(),
	})
}

// Config is the pcap driver's keys (see manual).
type Config struct {
	Read  string `toml:"read"`
	Loop  bool   `toml:"loop"`
	Write string `toml:"write"`
}

// Device is an open pcap device.
type Device struct {
	info  drivers.Info
	index uint16

	// RX, used only by the worker that serves queue 0.
	readPath string
	loop     bool
	rf       *os.File
	br       *bufio.Reader
	r        *pcapgo.Reader
	gzip     bool
	pool     *packet.Pool
	passPkts uint64 // packets delivered since the last rewind

	drained   atomic.Bool
	rxPkts    atomic.Uint64
	rxBytes   atomic.Uint64
	readErrs  atomic.Uint64
	oversize  atomic.Uint64
	poolEmpty atomic.Uint64
	loops     atomic.Uint64

	errMu   sync.Mutex
	readErr error

	// TX, under mu.
	mu        sync.Mutex
	writePath string
	wf        *os.File
	bw        *bufio.Writer
	w         *pcapgo.Writer
	writeErr  error
	closed    bool
	txPkts    atomic.Uint64
	txBytes   atomic.Uint64
	txErrs    atomic.Uint64
	txDropped atomic.Uint64
	// logf reports a broken file, once per device (OpenContext.Logf).
	logf func(format string, args ...any)
}

var _ drivers.Device = (*Device)(nil)

// poolSize is PoolSize, lowered by the fuzz test to keep each run cheap.
// It is a test seam: written only by this package's tests, before they
// open a device; no graph state.
var poolSize = PoolSize

func resolve(base, p string) string {
	if base != "" && !filepath.IsAbs(p) {
		p = filepath.Join(base, p)
	}
	return filepath.Clean(p)
}

func open(cfg any, ctx drivers.OpenContext) (drivers.Device, error) {
	c, ok := cfg.(*Config)
	if !ok {
		return nil, fmt.Errorf("pcap: config is %T, want *pcap.Config", cfg)
	}
	if c.Read == "" && c.Write == "" {
		return nil, errors.New(`a pcap device needs "read", "write" or both`)
	}
	if c.Loop && c.Read == "" {
		return nil, conf.Errorf("loop", "loop needs a read file")
	}
	d := &Device{
		info:  drivers.Info{Name: ctx.Name, Driver: "pcap", MAC: ctx.MAC, Addresses: ctx.Addresses},
		index: uint16(ctx.Index),
		loop:  c.Loop,
		logf:  ctx.Logf,
	}
	if c.Read != "" {
		d.readPath = resolve(ctx.BaseDir, c.Read)
		if err := d.openRead(); err != nil {
			return nil, conf.Errorf("read", "%v", err)
		}
	}
	if c.Write != "" {
		d.writePath = resolve(ctx.BaseDir, c.Write)
		if err := d.openWrite(); err != nil {
			d.Close()
			return nil, conf.Errorf("write", "%v", err)
		}
	}
	return d, nil
}

func (d *Device) openRead() error {
	// Only a regular file: a FIFO would block the open (and check) until
	// a writer came, and a device never ends.
	f, err := safefile.OpenRegular(d.readPath)
	if err != nil {
		return err
	}
	// pcapgo wraps its reader in a bufio.Reader unless it already is one of
	// at least 4 KiB; handing it ours keeps one buffer we can rewind.
	br := bufio.NewReaderSize(f, ioBuffer)
	// A file shorter than 4 bytes gives what it has (Peek's error says
	// only that): the cases below decide on the bytes.
	magic, _ := br.Peek(4)
	switch {
	case len(magic) == 0:
		err = fmt.Errorf("%s: empty file, not a pcap file", d.readPath)
	case len(magic) >= 2 && magic[0] == 0x1f && magic[1] == 0x8b:
		d.gzip = true
		err = nil
	case len(magic) == 4 && binary.BigEndian.Uint32(magic) == 0x0a0d0d0a:
		err = fmt.Errorf("%s: pcapng is not supported, only pcap (convert it: editcap -F pcap IN OUT)", d.readPath)
	default:
		err = nil
	}
	if err != nil {
		f.Close()
		return err
	}
	r, err := pcapgo.NewReader(br)
	if err != nil {
		f.Close()
		if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
			return fmt.Errorf("%s: not a pcap file (too short for a pcap header)", d.readPath)
		}
		return fmt.Errorf("%s: not a pcap file (%v)", d.readPath, err)
	}
	if lt := r.LinkType(); lt != layers.LinkTypeEthernet {
		f.Close()
		return fmt.Errorf("%s: link type %s (%d); only Ethernet (1) is supported", d.readPath, lt, uint32(lt))
	}
	r.SetSnaplen(maxCapture)
	d.rf, d.br, d.r = f, br, r
	d.pool = packet.NewPool(poolSize)
	return nil
}

func (d *Device) openWrite() error {
	var rs os.FileInfo
	if d.rf != nil {
		rs, _ = d.rf.Stat()
	}
	if err := checkWrite(d.writePath, d.readPath, rs); err != nil {
		return err
	}
	// A new file renamed over the old one: a file of that name is
	// replaced, not truncated through a link, and a link, FIFO or device
	// there is refused.
	f, err := safefile.Replace(d.writePath, 0o644)
	if err != nil {
		return err
	}
	bw := bufio.NewWriterSize(f, ioBuffer)
	w := pcapgo.NewWriter(bw)
	if err := w.WriteFileHeader(Snaplen, layers.LinkTypeEthernet); err != nil {
		f.Close()
		return fmt.Errorf("%s: %v", d.writePath, err)
	}
	d.wf, d.bw, d.w = f, bw, w
	return nil
}

// RxQueues is 1: a file is read in order.
func (d *Device) RxQueues() int { return 1 }

// Drained reports that the read file is exhausted (or broken); a device
// that does not read is always drained.
func (d *Device) Drained(q int) bool { return d.r == nil || q != 0 || d.drained.Load() }

// Receive reads frames into b until it is full, the file ends or the pool
// is empty.
func (d *Device) Receive(q int, b *packet.Batch) int {
	if q != 0 || d.r == nil || d.drained.Load() {
		return 0
	}
	n, bytes := 0, 0
	var p *packet.Packet
	for !b.Full() {
		if p == nil {
			if p = d.pool.Get(); p == nil {
				d.poolEmpty.Add(1)
				break
			}
		}
		data, _, err := d.r.ZeroCopyReadPacketData()
		if err != nil {
			if err == io.EOF {
				// A clean end: the file ends on a record boundary.
				if d.loop && d.passPkts > 0 {
					if err := d.rewind(); err == nil {
						continue
					} else {
						d.fail(err)
						break
					}
				}
				d.drained.Store(true)
				break
			}
			d.fail(err)
			break
		}
		if len(data) > maxFrame {
			d.oversize.Add(1) // p is kept for the next frame
			continue
		}
		p.SetFrame(data)
		p.L3 = packet.L3Offset(p.Data)
		p.InDevice = d.index
		b.Add(p)
		p = nil
		n++
		d.passPkts++
		bytes += len(data)
	}
	if p != nil {
		p.Free()
	}
	if n > 0 {
		d.rxPkts.Add(uint64(n))
		d.rxBytes.Add(uint64(bytes))
	}
	return n
}

// rewind starts the next pass over the read file. A plain pcap reuses the
// reader: its records start right after the 24-byte header, and the
// reader reads through d.br, which is refilled from there. A gzip file is
// decompressed from its start again, with a new reader.
func (d *Device) rewind() error {
	d.passPkts = 0
	d.loops.Add(1)
	if !d.gzip {
		if _, err := d.rf.Seek(pcapHeaderLen, io.SeekStart); err != nil {
			return err
		}
		d.br.Reset(d.rf)
		return nil
	}
	if _, err := d.rf.Seek(0, io.SeekStart); err != nil {
		return err
	}
	d.br.Reset(d.rf)
	r, err := pcapgo.NewReader(d.br)
	if err != nil {
		return err
	}
	r.SetSnaplen(maxCapture)
	d.r = r
	return nil
}

// fail stops reading after a read error: the frames before it were
// delivered, the rest of the file is not trusted.
func (d *Device) fail(err error) {
	if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
		err = fmt.Errorf("truncated file: %w", err)
	}
	d.readErrs.Add(1)
	d.drained.Store(true)
	d.errMu.Lock()
	first := d.readErr == nil
	if first {
		d.readErr = err
	}
	d.errMu.Unlock()
	if first {
		d.logf("pcap: reading %s: %v; reading stopped", d.readPath, err)
	}
}

// ReadError returns the error that stopped reading, if any.
func (d *Device) ReadError() error {
	d.errMu.Lock()
	defer d.errMu.Unlock()
	return d.readErr
}

// Transmit writes every packet of b to the write file, stamped with the
// time of the write, and frees them.
func (d *Device) Transmit(worker int, b *packet.Batch) {
	if len(b.Pkts) == 0 {
		return
	}
	d.mu.Lock()
	if d.w == nil || d.closed {
		d.mu.Unlock()
		d.txDropped.Add(uint64(len(b.Pkts)))
		b.FreeAll()
		return
	}
	ci := gopacket.CaptureInfo{Timestamp: time.Now()}
	var n, bytes, errs uint64
	for _, p := range b.Pkts {
		ci.CaptureLength, ci.Length = len(p.Data), len(p.Data)
		if err := d.w.WritePacket(ci, p.Data); err != nil {
			errs++
			d.writeFailed(err)
		} else {
			n++
			bytes += uint64(len(p.Data))
		}
		p.Free()
	}
	d.mu.Unlock()
	b.Reset()
	d.txPkts.Add(n)
	d.txBytes.Add(bytes)
	if errs > 0 {
		d.txErrs.Add(errs)
	}
}

// writeFailed records and logs the first write error; d.mu is held.
func (d *Device) writeFailed(err error) {
	if d.writeErr == nil {
		d.writeErr = err
		d.logf("pcap: writing %s: %v", d.writePath, err)
	}
}

// Flush writes out the buffered frames.
func (d *Device) Flush() error {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.bw == nil || d.closed {
		return nil
	}
	if err := d.bw.Flush(); err != nil {
		d.writeFailed(err)
		return fmt.Errorf("pcap device %q: writing %s: %w", d.info.Name, d.writePath, err)
	}
	return nil
}

// Close flushes and closes the files. It is safe to call twice.
func (d *Device) Close() error {
	err := d.Flush()
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.closed {
		return nil
	}
	d.closed = true
	if d.wf != nil {
		if e := d.wf.Close(); e != nil && err == nil {
			err = fmt.Errorf("pcap device %q: closing %s: %w", d.info.Name, d.writePath, e)
		}
	}
	if d.rf != nil {
		d.rf.Close() // read-only: nothing to lose
	}
	d.drained.Store(true)
	return err
}

// Info describes the device.
func (d *Device) Info() drivers.Info { return d.info }

// Stats returns the device's counters.
func (d *Device) Stats() []drivers.Counter {
	return []drivers.Counter{
		{Name: "rx_packets", Value: d.rxPkts.Load()},
		{Name: "rx_bytes", Value: d.rxBytes.Load()},
		{Name: "tx_packets", Value: d.txPkts.Load()},
		{Name: "tx_bytes", Value: d.txBytes.Load()},
		{Name: "read_errors", Value: d.readErrs.Load()},
		{Name: "oversize", Value: d.oversize.Load()},
		{Name: "rx_pool_empty", Value: d.poolEmpty.Load()},
		{Name: "tx_errors", Value: d.txErrs.Load()},
		{Name: "tx_dropped", Value: d.txDropped.Load()},
		{Name: "loops", Value: d.loops.Load()},
	}
}
