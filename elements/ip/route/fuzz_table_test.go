package route

import (
	"net/netip"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/junction-dataplane/junction/packet"
)

// FuzzRoutesFile: any file content either loads, and then every route is
// found by the table, or gives an error naming file:line (or the key).
func FuzzRoutesFile(f *testing.F) {
	for _, s := range []string{
		"10.0.0.0/8 via 10.1.0.2 out 0\n# comment\n\n192.168.1.0/24 out 1   # trailing\n",
		"2001:db8::/32 via fe80::1 via fe80::2 out 0 out 1\n::/0 out 2\n",
		"0.0.0.0/0 via 10.0.0.1 via 10.0.0.2 out 3\n10.1.2.3 out 1\n10.1.2.128/25 out 4\n",
		"10.0.0.0/8 out 0\n10.0.0.0/8 out 1\n",
		"10.0.0.0/8 out\n", "\x00\xff\n\r\n", "1.2.3.4/33 out 1",
	} {
		f.Add([]byte(s))
	}
	dir := f.TempDir()
	lineRef := regexp.MustCompile(`routes\.txt:\d+: `)
	f.Fuzz(func(t *testing.T, data []byte) {
		file := filepath.Join(dir, "routes.txt")
		if err := os.WriteFile(file, data, 0o644); err != nil {
			t.Fatal(err)
		}
		rs, err := ReadRoutesFile(file)
		if err != nil {
			if !lineRef.MatchString(err.Error()) && !strings.Contains(err.Error(), "too many routes") {
				t.Fatalf("error without file:line: %v", err)
			}
			return
		}
		tb, err := NewTable(rs)
		if err != nil {
			if strings.Contains(err.Error(), "table full") {
				return
			}
			t.Fatalf("parsed routes refused by the table: %v", err)
		}
		if tb.Len() != len(rs) {
			t.Fatalf("table holds %d of %d routes", tb.Len(), len(rs))
		}
		for _, r := range rs {
			got, ok := tb.Route(r.Prefix.Addr())
			if !ok || !got.Prefix.Contains(r.Prefix.Addr()) || got.Prefix.Bits() < r.Prefix.Bits() {
				t.Fatalf("route %v: lookup of its address gave %v %v", r, got, ok)
			}
			if got.Prefix == r.Prefix && !got.Equal(r) {
				t.Fatalf("route %v stored as %v", r, got)
			}
		}
	})
}

// FuzzTableOps drives inserts and deletes on a small address space (so
// that prefixes overlap a lot) through Apply and compares the lock-free
// lookups with the reference after every batch.
func FuzzTableOps(f *testing.F) {
	f.Add([]byte{0, 10, 1, 8, 1, 0, 10, 1, 24, 2, 0, 10, 1, 26, 3, 1, 10, 1, 24, 0, 0, 0, 0, 0, 4})
	f.Add([]byte{2, 0x20, 1, 48, 1, 2, 0x20, 1, 64, 2, 3, 0x20, 1, 48, 0, 2, 0, 0, 0, 5})
	f.Add([]byte{0, 1, 2, 32, 1, 0, 1, 2, 31, 2, 0, 1, 2, 25, 3, 1, 1, 2, 32, 0, 1, 1, 2, 25, 0})
	f.Fuzz(func(t *testing.T, ops []byte) {
		tb, _ := NewTable(nil)
		ref := newRefTable()
		var probes4 []uint32
		var probes6 []netip.Addr
		var batch []Change
		flush := func() {
			if err := tb.Apply(batch); err != nil {
				t.Fatal(err)
			}
			for _, c := range batch {
				if c.Delete {
					ref.delete(c.Route.Prefix)
				} else {
					ref.insert(c.Route)
				}
			}
			batch = batch[:0]
			f := tb.cur.Load()
			for _, d := range probes4 {
				for _, x := range []uint32{d, d + 1, d - 1, d | 0xff, d | 0xffff} {
					check4(t, f, ref, x)
				}
			}
			for _, a := range probes6 {
				b := a.As16()
				got := hopsOf(f, f.lookup6(&b))
				want, ok := ref.lookup6(a)
				if ok != (got != nil) || (ok && !slices.Equal(got, want.Hops())) {
					t.Fatalf("lookup %v: got %v, want %v", a, got, want)
				}
			}
		}
		for len(ops) >= 5 {
			op, a, b, bits, val := ops[0], ops[1], ops[2], ops[3], ops[4]
			ops = ops[5:]
			var p netip.Prefix
			if op&2 == 0 {
				addr := uint32(a)<<24 | uint32(b)<<16 | uint32(a^b)<<8 | uint32(val)
				p = netip.PrefixFrom(packet.AddrFromU32(addr), int(bits)%33).Masked()
				probes4 = append(probes4, addr)
			} else {
				var x [16]byte
				x[0], x[1], x[5], x[15] = a, b, val, a^b
				p = netip.PrefixFrom(netip.AddrFrom16(x), int(bits)%129).Masked()
				probes6 = append(probes6, netip.AddrFrom16(x))
			}
			if op&1 == 1 {
				batch = append(batch, Change{Route: Route{Prefix: p}, Delete: true})
			} else {
				batch = append(batch, Change{Route: Route{Prefix: p, Out: int(val % 8)}})
			}
			if op&4 != 0 || len(batch) > 8 {
				flush()
			}
		}
		flush()
	})
}
