package conntrack

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/junction-dataplane/junction/elements"
	"github.com/junction-dataplane/junction/internal/safefile"
)

// Flows across a restart (the state_file key). A restarted forwarder picks
// a flow up mid-stream only from a packet of its original direction: the
// first packet of the reply direction (a server's data to a masqueraded
// client) names the public address, and nothing says which inside host it
// was for. So Conntrack writes each worker's live flows, with their NAT
// tuples and states, to PREFIX.wN when the forwarder stops, and reads them
// back into worker N's table when it starts (then removes the file: a
// flow is restored once). A worker owns a flow by the symmetric flow hash,
// which does not change between runs, so a file is only read by a graph
// with as many workers as wrote it. Window tracking follows restored TCP
// flows liberally, as flows picked up mid-stream.

// stateMagic starts a state file; its last byte is the format's version.
var stateMagic = [4]byte{'J', 'C', 'T', 1}

// savedConn is one flow in a state file (little-endian, fixed size).
type savedConn struct {
	T       [2]savedTuple
	State   uint8
	Flags   uint8 // FlagAssured | FlagSeenReply | FlagSNAT | FlagDNAT | FlagSNATDone | FlagDNATDone
	Dev     [2]uint8
	Left    int64 // nanoseconds to expiry
	Packets [2]uint32
	Bytes   [2]uint64
}

type savedTuple struct {
	Src, Dst     uint32
	Sport, Dport uint16
	Proto        uint8
	_            [3]byte
}

const savedFlags = FlagAssured | FlagSeenReply | FlagSNAT | FlagDNAT | FlagSNATDone | FlagDNATDone

// stateHeader precedes the flows.
type stateHeader struct {
	Magic   [4]byte
	Workers uint32
	Count   uint32
}

// StatePath is the state file of worker w for prefix.
func StatePath(prefix string, w int) string { return prefix + ".w" + strconv.Itoa(w) }

// SaveState writes the table's live, unexpired flows to path (mode 0600,
// replaced atomically) for a graph of workers workers.
func (t *Table) SaveState(path string, workers int) error {
	// A fresh file renamed over path: a link planted at path or at a
	// temporary name next to it is not written through.
	return safefile.WriteAtomic(path, 0o600, func(f *os.File) error { return t.writeState(f, workers) })
}

func (t *Table) writeState(f *os.File, workers int) error {
	now := t.now()
	w := bufio.NewWriter(f)
	var n uint32
	for i := 1; i < len(t.conns); i++ {
		if c := &t.conns[i]; c.Flags&flagLive != 0 {
			t.Sync(uint32(i)) // the flow cache's hits
			if now < c.Expires {
				n++
			}
		}
	}
	err := binary.Write(w, binary.LittleEndian, stateHeader{stateMagic, uint32(workers), n})
	for i := 1; i < len(t.conns) && err == nil; i++ {
		c := &t.conns[i]
		if c.Flags&flagLive == 0 || now >= c.Expires {
			continue
		}
		s := savedConn{State: c.State, Flags: c.Flags & savedFlags, Dev: c.Dev, Left: c.Expires - now,
			Packets: c.Packets, Bytes: c.Bytes}
		for d := range 2 {
			k := &c.T[d]
			s.T[d] = savedTuple{Src: k.Src, Dst: k.Dst, Sport: k.Sport, Dport: k.Dport, Proto: k.Proto}
		}
		err = binary.Write(w, binary.LittleEndian, &s)
	}
	if err == nil {
		err = w.Flush()
	}
	return err
}

// errNoState is LoadState's answer when there is no file.
var errNoState = errors.New("no state file")

// LoadState reads the flows of a state file written for workers workers
// into the table and removes the file; it returns how many it restored.
// A file of another format or worker count, or one that ends early, is an
// error (what was read before stays); flows that do not fit or whose
// tuples are already in the table are skipped.
func (t *Table) LoadState(path string, workers int) (int, error) {
	// Only a regular file: a FIFO would block the worker's start (and
	// run's -duration) until a writer came.
	f, err := safefile.OpenRegular(path)
	if errors.Is(err, os.ErrNotExist) {
		return 0, errNoState
	}
	if err != nil {
		return 0, err
	}
	defer f.Close()
	defer os.Remove(path)
	r := bufio.NewReader(f)
	var h stateHeader
	if err := binary.Read(r, binary.LittleEndian, &h); err != nil {
		return 0, fmt.Errorf("%s: header: %w", path, err)
	}
	if h.Magic != stateMagic {
		return 0, fmt.Errorf("%s: not a Conntrack state file of this version", path)
	}
	if int(h.Workers) != workers {
		return 0, fmt.Errorf("%s: written by a graph of %d workers, this one has %d (a flow's worker depends on the count): not restored", path, h.Workers, workers)
	}
	now := t.now()
	n := 0
	for i := uint32(0); i < h.Count; i++ {
		var s savedConn
		if err := binary.Read(r, binary.LittleEndian, &s); err != nil {
			if errors.Is(err, io.EOF) {
				err = io.ErrUnexpectedEOF
			}
			return n, fmt.Errorf("%s: flow %d of %d: %w", path, i+1, h.Count, err)
		}
		var k [2]Tuple
		for d := range 2 {
			st := &s.T[d]
			k[d] = Tuple{Src: st.Src, Dst: st.Dst, Sport: st.Sport, Dport: st.Dport, Proto: st.Proto}
		}
		if s.Left <= 0 || s.State >= tcpStates || k[0].Proto != k[1].Proto || t.InUse(&k[0]) || t.InUse(&k[1]) {
			continue
		}
		if t.free == 0 {
			break // full: the rest is dropped (they will be picked up, or not)
		}
		idx, ok := t.Create(&k[0], now)
		if !ok {
			break
		}
		if k[1] != k[0].Inverse() {
			t.SetReply(idx, &k[1])
		}
		c := &t.conns[idx]
		c.State, c.Dev, c.Packets, c.Bytes = s.State, s.Dev, s.Packets, s.Bytes
		c.Flags |= s.Flags &^ FlagAssured
		if s.Flags&FlagAssured != 0 {
			t.SetAssured(idx)
		}
		c.Expires = now + s.Left
		if t.tw.w != nil {
			t.tw.w[idx] = tcpWin{liberal: true}
		}
		n++
	}
	t.Created -= uint64(n) // not new flows
	return n, nil
}

// CheckEnv refuses, as a run would find them, state files (PREFIX.wN)
// that are not regular files: a FIFO, a device or a directory is neither
// read nor replaced, and a symbolic link is read but not replaced
// (elements.EnvChecker; forwarder check and run share it).
func (c *Config) CheckEnv(elements.DeviceInfos) error {
	if c.StateFile == "" {
		return nil
	}
	files, _ := filepath.Glob(globEscape(c.StateFile) + ".w[0-9]*")
	for _, f := range files {
		n, ok := strings.CutPrefix(filepath.Base(f), filepath.Base(c.StateFile)+".w")
		if _, err := strconv.ParseUint(n, 10, 32); !ok || err != nil {
			continue // not PREFIX.wN
		}
		if err := safefile.CheckReplace(f); err != nil {
			return elements.Errorf("state_file", "%v", err)
		}
	}
	return nil
}

// globEscape quotes the glob metacharacters of a path.
func globEscape(p string) string {
	var b strings.Builder
	for _, r := range p {
		if strings.ContainsRune(`*?[\`, r) {
			b.WriteByte('\\')
		}
		b.WriteRune(r)
	}
	return b.String()
}

var _ elements.EnvChecker = (*Config)(nil)
