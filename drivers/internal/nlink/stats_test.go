package nlink

import (
	"encoding/binary"
	"testing"

	"golang.org/x/sys/unix"
)

func TestParseStats64(t *testing.T) {
	// struct rtnl_link_stats64: word i holds i+1, so each field shows
	// which word it was read from.
	v := make([]byte, 8*25)
	for i := 0; i < 25; i++ {
		binary.NativeEndian.PutUint64(v[8*i:], uint64(i+1))
	}
	s, ok := parseStats64(v)
	if !ok {
		t.Fatal("parseStats64 refused a full struct")
	}
	want := LinkStats{RxDropped: 7, TxDropped: 8, RxOverErrors: 12, RxFIFOErrors: 15, RxMissedErrors: 16, TxFIFOErrors: 19}
	if s != want {
		t.Fatalf("got %+v, want %+v", s, want)
	}
	if _, ok := parseStats64(v[:8*7]); ok {
		t.Fatal("a struct without tx_dropped was accepted")
	}
	// An older kernel's shorter struct: the fields it has.
	s, ok = parseStats64(v[:8*12])
	if !ok || s.RxOverErrors != 12 || s.RxMissedErrors != 0 {
		t.Fatalf("short struct: %+v %v", s, ok)
	}
}

func TestLinkKind(t *testing.T) {
	info := appendAttr(nil, unix.IFLA_INFO_KIND, []byte("veth\x00"))
	if k := linkKind(info); k != "veth" {
		t.Fatalf("kind %q, want veth", k)
	}
	data := appendAttr(nil, unix.IFLA_INFO_DATA|unix.NLA_F_NESTED, []byte{1, 2, 3, 4})
	if k := linkKind(append(data, info...)); k != "veth" {
		t.Fatalf("kind after another attribute %q, want veth", k)
	}
	if k := linkKind([]byte{200, 0, 1, 0}); k != "" {
		t.Fatalf("bad length: kind %q", k)
	}
}
