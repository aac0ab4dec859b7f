package ip

import (
	"bufio"
	"errors"
	"fmt"
	"net/netip"
	"os"
	"strconv"
	"strings"

	"github.com/junction-dataplane/junction/elements"
)

// ParseRoute reads one route in IPLookup's syntax:
//
//	PREFIX [via NEXTHOP] out PORT
//
// e.g. "10.0.0.0/8 via 10.1.0.2 out 0" or "192.168.1.0/24 out 1". A bare
// address is a /32. The prefix must have no host bits set (a typo such as
// 10.1.0.0/8 is reported, not silently masked).
func ParseRoute(s string) (Route, error) {
	r, err := parseRoute(s)
	if err != nil {
		return Route{}, err // no half-parsed route together with an error
	}
	return r, nil
}

func parseRoute(s string) (Route, error) {
	var r Route
	f := strings.Fields(s)
	if len(f) == 0 {
		return r, errors.New("empty route")
	}
	p, err := parsePrefix(f[0])
	if err != nil {
		return r, err
	}
	r.Prefix = p
	f = f[1:]
	out := false
	for len(f) > 0 {
		switch f[0] {
		case "via":
			if r.NextHop.IsValid() {
				return r, errors.New("via given twice")
			}
			if len(f) < 2 {
				return r, errors.New("via needs an address")
			}
			a, err := netip.ParseAddr(f[1])
			if err != nil || !a.Is4() {
				return r, fmt.Errorf("bad via address %q: want an IPv4 address", f[1])
			}
			r.NextHop = a
		case "out":
			if out {
				return r, errors.New("out given twice")
			}
			if len(f) < 2 {
				return r, errors.New("out needs a port number")
			}
			n, err := strconv.Atoi(f[1])
			if err != nil {
				return r, fmt.Errorf("bad out port %q: want a number 0..%d", f[1], MaxPort)
			}
			r.Out, out = n, true
		default:
			return r, fmt.Errorf("unexpected %q: want \"via NEXTHOP\" or \"out PORT\"", f[0])
		}
		f = f[2:]
	}
	if !out {
		return r, errors.New("missing \"out PORT\"")
	}
	return r, checkRoute(r)
}

func parsePrefix(s string) (netip.Prefix, error) {
	if !strings.Contains(s, "/") {
		a, err := netip.ParseAddr(s)
		if err != nil || !a.Is4() {
			return netip.Prefix{}, fmt.Errorf("bad prefix %q: want an IPv4 prefix such as 10.0.0.0/8", s)
		}
		return netip.PrefixFrom(a, 32), nil
	}
	p, err := netip.ParsePrefix(s)
	if err != nil || !p.Addr().Is4() {
		return netip.Prefix{}, fmt.Errorf("bad prefix %q: want an IPv4 prefix such as 10.0.0.0/8", s)
	}
	return p, nil
}

// parseRoutes parses the routes key's entries and the routes_file's lines
// into one list; a prefix given twice is an error (which one would win is
// not obvious to a reader). Errors name the key, the entry or file line.
func parseRoutes(entries []string, file string) ([]Route, error) {
	var rs []Route
	seen := map[netip.Prefix]string{}
	for i, s := range entries {
		r, err := ParseRoute(s)
		if err != nil {
			return nil, elements.Errorf("routes", "entry %d %q: %v", i+1, s, err)
		}
		where := fmt.Sprintf("routes entry %d", i+1)
		if prev, dup := seen[r.Prefix]; dup {
			return nil, elements.Errorf("routes", "entry %d %q: prefix %v already routed by %s", i+1, s, r.Prefix, prev)
		}
		seen[r.Prefix] = where
		rs = append(rs, r)
	}
	if file == "" {
		return rs, nil
	}
	fh, err := os.Open(file)
	if err != nil {
		return nil, elements.Errorf("routes_file", "%v", err)
	}
	defer fh.Close()
	sc := bufio.NewScanner(fh)
	line := 0
	for sc.Scan() {
		line++
		s := sc.Text()
		if i := strings.IndexByte(s, '#'); i >= 0 {
			s = s[:i]
		}
		s = strings.TrimSpace(s)
		if s == "" {
			continue
		}
		r, err := ParseRoute(s)
		if err != nil {
			return nil, elements.Errorf("routes_file", "%s:%d: %q: %v", file, line, s, err)
		}
		if prev, dup := seen[r.Prefix]; dup {
			return nil, elements.Errorf("routes_file", "%s:%d: %q: prefix %v already routed by %s", file, line, s, r.Prefix, prev)
		}
		seen[r.Prefix] = fmt.Sprintf("%s:%d", file, line)
		rs = append(rs, r)
	}
	if err := sc.Err(); err != nil {
		return nil, elements.Errorf("routes_file", "%s:%d: %v", file, line+1, err)
	}
	return rs, nil
}
