package rss

import (
	"encoding/binary"
	"errors"
	"math/rand/v2"
	"net/netip"
	"testing"

	"github.com/junction-dataplane/junction/internal/netns"
)

// msKey is the key of Microsoft's RSS verification suite ("Verifying the
// RSS Hash Calculation").
var msKey = []byte{
	0x6d, 0x5a, 0x56, 0xda, 0x25, 0x5b, 0x0e, 0xc2, 0x41, 0x67, 0x25, 0x3d, 0x43, 0xa3, 0x8f, 0xb0,
	0xd0, 0xca, 0x2b, 0xcb, 0xae, 0x7b, 0x30, 0xb4, 0x77, 0xcb, 0x2d, 0xa3, 0x80, 0x30, 0xf2, 0x0c,
	0x6a, 0x42, 0xb7, 0x3b, 0xbe, 0xac, 0x01, 0xfa,
}

func a4(s string) uint32 { a := netip.MustParseAddr(s).As4(); return binary.BigEndian.Uint32(a[:]) }

// TestToeplitzVectors: the IPv4 vectors of the verification suite, the
// addresses alone and with the TCP ports.
func TestToeplitzVectors(t *testing.T) {
	for _, v := range []struct {
		dst, src     string
		dport, sport uint16
		ip, tcp      uint32
	}{
		{"161.142.100.80", "66.9.149.187", 1766, 2794, 0x323e8fc2, 0x51ccc178},
		{"65.69.140.83", "199.92.111.2", 4739, 14230, 0xd718262a, 0xc626b0ea},
		{"12.22.207.184", "24.19.198.95", 38024, 12898, 0xd2d0a5de, 0x5c2b394a},
		{"209.142.163.6", "38.27.205.30", 2217, 48228, 0x82989176, 0xafc7327f},
		{"202.188.127.2", "153.39.163.191", 1303, 44251, 0x5d1809c5, 0x10e828a2},
	} {
		var in [8]byte
		binary.BigEndian.PutUint32(in[0:], a4(v.src))
		binary.BigEndian.PutUint32(in[4:], a4(v.dst))
		if h := Toeplitz(msKey, in[:]); h != v.ip {
			t.Errorf("%s -> %s: %#08x, want %#08x", v.src, v.dst, h, v.ip)
		}
		if h := HashV4(msKey, a4(v.src), a4(v.dst), v.sport, v.dport); h != v.tcp {
			t.Errorf("%s:%d -> %s:%d: %#08x, want %#08x", v.src, v.sport, v.dst, v.dport, h, v.tcp)
		}
	}
}

// TestSymmetricKey: with the 0x6d5a key both directions hash alike;
// with Microsoft's key they do not.
func TestSymmetricKey(t *testing.T) {
	k := SymmetricKey(40)
	c := &Config{Key: k, Table: make([]uint32, 128), HFunc: hashTop}
	for i := range c.Table {
		c.Table[i] = uint32(i % 4)
	}
	if !c.Symmetric() || !c.Toeplitz() {
		t.Fatal("the 0x6d5a key is not reported symmetric")
	}
	if (&Config{Key: msKey}).Symmetric() {
		t.Fatal("Microsoft's key is reported symmetric")
	}
	rng := rand.New(rand.NewPCG(1, 2))
	asym := 0
	for range 10000 {
		s, d := rng.Uint32(), rng.Uint32()
		sp, dp := uint16(rng.Uint32()), uint16(rng.Uint32())
		if HashV4(k, s, d, sp, dp) != HashV4(k, d, s, dp, sp) {
			t.Fatalf("%#x:%d -> %#x:%d hashes differently each way", s, sp, d, dp)
		}
		if c.Queue(s, d, sp, dp) != c.Queue(d, s, dp, sp) {
			t.Fatal("the reply lands on another queue")
		}
		if HashV4(msKey, s, d, sp, dp) != HashV4(msKey, d, s, dp, sp) {
			asym++
		}
	}
	if asym < 9900 {
		t.Errorf("Microsoft's key hashed %d of 10000 flows alike both ways", 10000-asym)
	}
}

// TestVethNotSupported: veth has no RSS configuration; reading and
// setting it says so.
func TestVethNotSupported(t *testing.T) {
	netns.RequireRoot(t)
	env := netns.New(t)
	a, b := env.NS("a"), env.NS("b")
	env.Veth(a, "v0", b, "v1", 2)
	var rerr, serr error
	if err := a.Do(func() error {
		_, rerr = Read("v0")
		_, serr = SetSymmetric("v0")
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	for what, err := range map[string]error{"Read": rerr, "SetSymmetric": serr} {
		if !errors.Is(err, ErrNotSupported) {
			t.Errorf("%s on a veth: %v, want ErrNotSupported", what, err)
		} else {
			t.Logf("%s: %v", what, err)
		}
	}
	if _, err := Read("nosuchdev0"); err == nil || errors.Is(err, ErrNotSupported) {
		t.Errorf("Read of a missing device: %v", err)
	}
}

func TestQueueAllocs(t *testing.T) {
	c := &Config{Key: SymmetricKey(40), Table: []uint32{0, 1, 2, 3}, HFunc: hashTop}
	if a := testing.AllocsPerRun(100, func() { c.Queue(1, 2, 3, 4) }); a != 0 {
		t.Fatalf("%v allocations per Queue", a)
	}
}
