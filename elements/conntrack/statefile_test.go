package conntrack_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/junction-dataplane/junction/elements"
	"github.com/junction-dataplane/junction/elements/conntrack"
	ct "github.com/junction-dataplane/junction/elements/conntrack/cttest"
	"github.com/junction-dataplane/junction/elements/elementtest"
	"github.com/junction-dataplane/junction/packet"
)

// TestStateFile: the flows a Conntrack had when it closed are back in the
// next one's table (state_file), with NAT'd reply tuples, TCP state,
// flags and counters; the file is read once.
func TestStateFile(t *testing.T) {
	prefix := filepath.Join(t.TempDir(), "ct")
	cfg := &conntrack.Config{Capacity: 64, TCPWindow: true, StateFile: prefix}
	h := elementtest.New(t, "Conntrack", cfg, nil)
	tb := h.Element.(*conntrack.Conntrack).Table()
	w := &winConn{t: t, h: h, tb: tb}
	w.handshake(7, 7)
	w.send(false, ct.ACK|ct.PSH, cISN+1, sISN+1, 502, 1000)
	// A masqueraded UDP flow: its reply tuple names the public address.
	k := conntrack.Tuple{Src: 0xc0a8010b, Dst: 0x08080808, Sport: 5353, Dport: 53, Proto: packet.ProtoUDP}
	idx, ok := tb.Create(&k, tb.Now())
	if !ok {
		t.Fatal("create")
	}
	reply := conntrack.Tuple{Src: 0x08080808, Dst: 0xcb007101, Sport: 53, Dport: 61000, Proto: packet.ProtoUDP}
	tb.SetReply(idx, &reply)
	tb.Conn(idx).Flags |= conntrack.FlagSNAT | conntrack.FlagSNATDone
	tb.Conn(idx).Expires = tb.Now() + 30e9
	if err := h.Element.(elements.Closer).Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(conntrack.StatePath(prefix, 0)); err != nil {
		t.Fatalf("no state file after Close: %v", err)
	}

	h2 := elementtest.New(t, "Conntrack", cfg, nil)
	tb2 := h2.Element.(*conntrack.Conntrack).Table()
	if tb2.Len() != 2 {
		t.Fatalf("%d flows restored, want 2", tb2.Len())
	}
	w2 := &winConn{t: t, h: h2, tb: tb2}
	if s := w2.state(); s != "ESTABLISHED" {
		t.Errorf("TCP flow restored in state %q", s)
	}
	c := w2.conn()
	if !c.Has(conntrack.FlagAssured|conntrack.FlagSeenReply) || c.Packets != [2]uint32{3, 1} {
		t.Errorf("TCP flow restored with flags %#x, packets %v", c.Flags, c.Packets)
	}
	j, dir, ok := tb2.Lookup(&reply)
	if !ok || dir != 1 || !tb2.Conn(j).Has(conntrack.FlagSNAT|conntrack.FlagSNATDone) || tb2.Conn(j).T[0] != k {
		t.Fatalf("the masqueraded flow's reply tuple finds nothing (or the wrong flow)")
	}
	// A packet from outside (the reply direction first) is established.
	st, _ := push(t, h2, ct.Frame(ct.F{Proto: "udp", Src: "8.8.8.8", Dst: "203.0.113.1", Sport: 53, Dport: 61000}))
	if st != packet.CtEstablished {
		t.Errorf("a reply after the restart: annotation %d", st)
	}
	// The TCP flow goes on (followed liberally: its packets were not all seen).
	st, tcp := w2.send(true, ct.ACK, sISN+1, cISN+1001, 1000, 0)
	w2.expect("the server's ACK after the restart", st, tcp, true, "ESTABLISHED")
	if h2.Counter("new") != 0 {
		t.Errorf("restored flows counted as new: %d", h2.Counter("new"))
	}
	if _, err := os.Stat(conntrack.StatePath(prefix, 0)); !os.IsNotExist(err) {
		t.Errorf("the state file is still there after it was read (%v)", err)
	}
}

func TestStateFileBad(t *testing.T) {
	dir := t.TempDir()
	tb := conntrack.NewTable(16, conntrack.DefaultTimeouts(), nil)
	k := conntrack.Tuple{Src: 1, Dst: 2, Sport: 3, Dport: 4, Proto: packet.ProtoUDP}
	idx, _ := tb.Create(&k, tb.Now())
	tb.Conn(idx).Expires = tb.Now() + 1e9
	k.Sport = 5
	idx, _ = tb.Create(&k, tb.Now())
	tb.Conn(idx).Expires = tb.Now() + 1e9
	path := filepath.Join(dir, "s")
	if err := tb.SaveState(path, 2); err != nil {
		t.Fatal(err)
	}
	b, _ := os.ReadFile(path)

	// Another worker count: refused, nothing restored.
	if n, err := conntrack.NewTable(16, conntrack.DefaultTimeouts(), nil).LoadState(path, 4); n != 0 || err == nil || !strings.Contains(err.Error(), "2 workers") {
		t.Errorf("worker count mismatch: %d restored, %v", n, err)
	}
	// Cut short: the first flow restored, the error names the second.
	os.WriteFile(path, b[:len(b)-10], 0o600)
	if n, err := conntrack.NewTable(16, conntrack.DefaultTimeouts(), nil).LoadState(path, 2); n != 1 || err == nil || !strings.Contains(err.Error(), "flow 2 of 2") {
		t.Errorf("truncated: %d restored, %v", n, err)
	}
	// Not a state file.
	os.WriteFile(path, []byte("hello, world, this is not it"), 0o600)
	if n, err := conntrack.NewTable(16, conntrack.DefaultTimeouts(), nil).LoadState(path, 2); n != 0 || err == nil {
		t.Errorf("garbage: %d restored, %v", n, err)
	}
	// A table too small keeps what fits.
	tb.SaveState(path, 2)
	if n, err := conntrack.NewTable(1, conntrack.DefaultTimeouts(), nil).LoadState(path, 2); n != 1 || err != nil {
		t.Errorf("into a 1-flow table: %d restored, %v", n, err)
	}
}
