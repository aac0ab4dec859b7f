package route

import (
	"errors"
	"fmt"
	"io"
	"net/netip"
	"os"
	"slices"
	"strconv"
	"strings"

	"github.com/junction-dataplane/junction/elements"
)

// ParseRoute reads one route in IPLookup's syntax:
//
//	PREFIX [via NEXTHOP]... out PORT [out PORT]...
//
// e.g. "10.0.0.0/8 via 10.1.0.2 out 0", "192.168.1.0/24 out 1" or
// "2001:db8::/32 via fe80::1 out 2". Several paths make an ECMP route:
// "0.0.0.0/0 via 10.1.0.2 via 10.2.0.2 out 0 out 1" pairs the i-th via with
// the i-th out; with one out, every via is on that port. A bare address is
// a /32 (/128). The prefix must have no host bits set (a typo such as
// 10.1.0.0/8 is reported, not silently masked). "PREFIX blackhole" (or
// "blackhole PREFIX", as ip route writes it), unreachable and prohibit
// are routes of those types, without paths.
func ParseRoute(s string) (Route, error) {
	r, err := parseRoute(s)
	if err != nil {
		return Route{}, err // no half-parsed route together with an error
	}
	return r, nil
}

// nextField returns the first space-separated field of s and the rest.
func nextField(s string) (string, string) {
	i := 0
	for i < len(s) && (s[i] == ' ' || s[i] == '\t' || s[i] == '\r' || s[i] == '\n' || s[i] == '\v' || s[i] == '\f') {
		i++
	}
	j := i
	for j < len(s) && s[j] != ' ' && s[j] != '\t' && s[j] != '\r' && s[j] != '\n' && s[j] != '\v' && s[j] != '\f' {
		j++
	}
	return s[i:j], s[j:]
}

func parseRoute(s string) (Route, error) {
	var r Route
	f, rest := nextField(s)
	if f == "" {
		return r, errors.New("empty route")
	}
	// A route type leads, as in ip route (blackhole 10.0.0.0/8), or
	// follows the prefix (10.0.0.0/8 blackhole).
	if t, ok := ParseType(f); ok && t != Unicast {
		r.Type = t
		if f, rest = nextField(rest); f == "" {
			return Route{}, fmt.Errorf("%v needs a prefix", t)
		}
	}
	p, err := parsePrefixAny(f)
	if err != nil {
		return r, err
	}
	r.Prefix = p
	if r.Type == Unicast {
		if f, more := nextField(rest); f != "" {
			if t, ok := ParseType(f); ok && t != Unicast {
				r.Type, rest = t, more
			}
		}
	}
	if r.Type != Unicast {
		if f, _ := nextField(rest); f != "" {
			return Route{}, fmt.Errorf("unexpected %q: a %v route has no via or out", f, r.Type)
		}
		return r, nil
	}
	var vias [MaxPaths]netip.Addr
	var outs [MaxPaths]int
	nv, no := 0, 0
	for {
		f, rest = nextField(rest)
		if f == "" {
			break
		}
		var arg string
		arg, rest = nextField(rest)
		switch f {
		case "via":
			if arg == "" {
				return r, errors.New("via needs an address")
			}
			a, err := netip.ParseAddr(arg)
			if err != nil || a.Is4() != p.Addr().Is4() || a.Zone() != "" {
				return r, fmt.Errorf("bad via address %q: want an %s address", arg, family(p))
			}
			if nv == MaxPaths {
				return r, fmt.Errorf("more than %d paths", MaxPaths)
			}
			vias[nv] = a
			nv++
		case "out":
			if arg == "" {
				return r, errors.New("out needs a port number")
			}
			n, err := strconv.Atoi(arg)
			if err != nil {
				return r, fmt.Errorf("bad out port %q: want a number 0..%d", arg, MaxPort)
			}
			if no == MaxPaths {
				return r, fmt.Errorf("more than %d paths", MaxPaths)
			}
			outs[no] = n
			no++
		default:
			return r, fmt.Errorf("unexpected %q: want \"via NEXTHOP\", \"out PORT\" or a route type (blackhole, unreachable, prohibit)", f)
		}
	}
	switch {
	case no == 0:
		return r, errors.New("missing \"out PORT\"")
	case nv == 0 && no > 1:
		return r, fmt.Errorf("%d out ports but no via: an ECMP route needs a via per path", no)
	case nv > 1 && no != 1 && no != nv:
		return r, fmt.Errorf("%d via and %d out: give one out for all, or one out per via", nv, no)
	}
	n := max(nv, 1)
	for i := range n {
		h := Hop{Out: outs[min(i, no-1)]}
		if nv > 0 {
			h.Via = vias[i]
		}
		if i == 0 {
			r.NextHop, r.Out = h.Via, h.Out
		} else {
			r.Also = append(r.Also, h)
		}
	}
	return r, checkRoute(r)
}

func family(p netip.Prefix) string {
	if p.Addr().Is4() {
		return "IPv4"
	}
	return "IPv6"
}

// parsePrefix reads an IPv4 prefix or address (a /32), for IPv4-only keys.
func parsePrefix(s string) (netip.Prefix, error) {
	p, err := parsePrefixAny(s)
	if err != nil || !p.Addr().Is4() {
		return netip.Prefix{}, fmt.Errorf("bad prefix %q: want an IPv4 prefix such as 10.0.0.0/8", s)
	}
	return p, nil
}

// parsePrefixAny reads an IPv4 or IPv6 prefix, or an address (a host route).
func parsePrefixAny(s string) (netip.Prefix, error) {
	bad := func() error {
		return fmt.Errorf("bad prefix %q: want an IPv4 or IPv6 prefix such as 10.0.0.0/8 or 2001:db8::/32", s)
	}
	var p netip.Prefix
	if !strings.Contains(s, "/") {
		a, err := netip.ParseAddr(s)
		if err != nil || a.Zone() != "" {
			return p, bad()
		}
		p = netip.PrefixFrom(a, a.BitLen())
	} else {
		var err error
		if p, err = netip.ParsePrefix(s); err != nil {
			return p, bad()
		}
	}
	if p.Addr().Is4In6() {
		return netip.Prefix{}, fmt.Errorf("bad prefix %q: write IPv4-mapped prefixes in IPv4 form", s)
	}
	return p, nil
}

// where names the source of a route: the routes key's entry, or a line of
// the routes file.
type where struct {
	file string
	line int32 // > 0: line of file; < 0: routes entry -line
}

func (w where) String() string {
	if w.line < 0 {
		return fmt.Sprintf("routes entry %d", -w.line)
	}
	return fmt.Sprintf("%s:%d", w.file, w.line)
}

// routeSet is a parsed configuration: routes and where each came from.
type routeSet struct {
	routes []Route
	lines  []int32
	file   string
	// outs is the output ports the routes use (0: not counted yet).
	outs int
}

// ports is the number of output ports the routes use (the highest Out of
// any path, plus one), counted once: a remembered set is validated again
// at every reload.
func (rs *routeSet) ports() int {
	if rs.outs == 0 {
		n := 1
		for _, r := range rs.routes {
			n = max(n, r.Out+1)
			for _, h := range r.Also {
				n = max(n, h.Out+1)
			}
		}
		rs.outs = n
	}
	return rs.outs
}

// parseRouteSet is parseRoutes with a limit on the number of routes (0:
// none), checked while reading so that a huge file is refused early.
func parseRouteSet(entries []string, file string, limit int) (*routeSet, error) {
	text := ""
	if file != "" {
		var err error
		if text, err = readRoutesFile(file); err != nil {
			return nil, elements.Errorf("routes_file", "%v", err)
		}
	}
	return parseRouteSetText(entries, file, text, limit)
}

// parseRouteSetText is parseRouteSet with the file's contents already read.
func parseRouteSetText(entries []string, file, text string, limit int) (*routeSet, error) {
	rs := &routeSet{file: file}
	for i, s := range entries {
		r, err := ParseRoute(s)
		if err != nil {
			return nil, elements.Errorf("routes", "entry %d %q: %v", i+1, s, err)
		}
		rs.routes = append(rs.routes, r)
		rs.lines = append(rs.lines, -int32(i+1))
	}
	if file != "" {
		if err := rs.parseFile(text, limit); err != nil {
			return nil, err
		}
	}
	if limit > 0 && len(rs.routes) > limit {
		return nil, elements.Errorf("routes", "%d routes exceed max_routes %d", len(rs.routes), limit)
	}
	if err := rs.checkDuplicates(); err != nil {
		return nil, err
	}
	return rs, nil
}

// MaxRoutesFileSize bounds a routes_file: at about 50 bytes a line, room
// for DefaultMaxRoutes routes with their next hops.
const MaxRoutesFileSize = 256 << 20

// readRoutesFile reads a routes file whole. Only a regular file of at most
// MaxRoutesFileSize bytes is read: a device (/dev/zero), a FIFO (whose
// open would wait for a writer) or a directory is refused before it is
// opened, and a file that grows past the bound while it is read is
// refused rather than read on.
func readRoutesFile(file string) (string, error) {
	fi, err := os.Stat(file)
	if err != nil {
		return "", err
	}
	if !fi.Mode().IsRegular() {
		return "", fmt.Errorf("%s: not a regular file but %s", file, fileKind(fi.Mode()))
	}
	if fi.Size() > MaxRoutesFileSize {
		return "", fmt.Errorf("%s is %d bytes: at most %d (MaxRoutesFileSize)", file, fi.Size(), MaxRoutesFileSize)
	}
	f, err := os.Open(file)
	if err != nil {
		return "", err
	}
	defer f.Close()
	if fi, err = f.Stat(); err != nil {
		return "", err
	}
	if !fi.Mode().IsRegular() {
		return "", fmt.Errorf("%s: not a regular file but %s", file, fileKind(fi.Mode()))
	}
	// Read into a Builder: its String is the text without a second copy.
	var b strings.Builder
	b.Grow(int(min(fi.Size(), MaxRoutesFileSize)) + 1)
	if _, err := io.Copy(&b, io.LimitReader(f, MaxRoutesFileSize+1)); err != nil {
		return "", err
	}
	if b.Len() > MaxRoutesFileSize {
		return "", fmt.Errorf("%s grew past %d bytes while read (MaxRoutesFileSize)", file, MaxRoutesFileSize)
	}
	return b.String(), nil
}

// maxRouteLine bounds one line of a routes file: a route with a dozen
// IPv6 next hops fits many times over, and no error message quotes more.
const maxRouteLine = 1024

// clipQuote quotes s for an error message, cut to 80 bytes.
func clipQuote(s string) string {
	if len(s) <= 80 {
		return strconv.Quote(s)
	}
	return strconv.Quote(strings.ToValidUTF8(s[:80], "")) + "..."
}

// fileKind names the kind of a file that is not a regular one.
func fileKind(m os.FileMode) string {
	switch {
	case m&os.ModeDir != 0:
		return "a directory"
	case m&os.ModeCharDevice != 0:
		return "a character device"
	case m&os.ModeDevice != 0:
		return "a block device"
	case m&os.ModeNamedPipe != 0:
		return "a FIFO"
	case m&os.ModeSocket != 0:
		return "a socket"
	}
	return "of mode " + m.Type().String()
}

func (rs *routeSet) parseFile(text string, limit int) error {
	// A rough count of lines sizes the slices once.
	if n := strings.Count(text, "\n") + 1; n < 1<<26 {
		rs.routes = slices.Grow(rs.routes, n)
		rs.lines = slices.Grow(rs.lines, n)
	}
	line := int32(0)
	for len(text) > 0 {
		line++
		var l string
		if i := strings.IndexByte(text, '\n'); i >= 0 {
			l, text = text[:i], text[i+1:]
		} else {
			l, text = text, ""
		}
		if i := strings.IndexByte(l, '#'); i >= 0 {
			l = l[:i]
		}
		s := strings.TrimSpace(l)
		if s == "" {
			continue
		}
		if len(s) > maxRouteLine {
			return elements.Errorf("routes_file", "%s:%d: %s: line of %d bytes, at most %d", rs.file, line, clipQuote(s), len(s), maxRouteLine)
		}
		r, err := ParseRoute(s)
		if err != nil {
			return elements.Errorf("routes_file", "%s:%d: %q: %v", rs.file, line, s, err)
		}
		rs.routes = append(rs.routes, r)
		rs.lines = append(rs.lines, line)
		if limit > 0 && len(rs.routes) > limit {
			return elements.Errorf("routes_file", "%s:%d: more than max_routes %d routes: refused before loading any", rs.file, line, limit)
		}
	}
	return nil
}

// checkDuplicates finds a prefix given twice by sorting, not with a map:
// for a million routes that is several times faster and allocates one
// slice of integers.
func (rs *routeSet) checkDuplicates() error {
	keys := make([]uint64, 0, len(rs.routes))
	var v6 map[netip.Prefix]int
	for i, r := range rs.routes {
		if r.Prefix.Addr().Is4() {
			keys = append(keys, uint64(u32of(r.Prefix.Addr()))<<32|uint64(r.Prefix.Bits())<<26|uint64(i))
			continue
		}
		if v6 == nil {
			v6 = map[netip.Prefix]int{}
		}
		if j, dup := v6[r.Prefix]; dup {
			return rs.dupError(j, i)
		}
		v6[r.Prefix] = i
	}
	if len(rs.routes) >= 1<<26 {
		return elements.Errorf("routes_file", "too many routes")
	}
	slices.Sort(keys)
	for k := 1; k < len(keys); k++ {
		if keys[k]>>26 == keys[k-1]>>26 {
			a, b := int(keys[k-1]&(1<<26-1)), int(keys[k]&(1<<26-1))
			return rs.dupError(min(a, b), max(a, b))
		}
	}
	return nil
}

func (rs *routeSet) dupError(first, second int) error {
	r := rs.routes[second]
	w := where{rs.file, rs.lines[second]}
	prev := where{rs.file, rs.lines[first]}
	if w.line < 0 {
		return elements.Errorf("routes", "entry %d %q: prefix %v already routed by %s", -w.line, r.String(), r.Prefix, prev)
	}
	return elements.Errorf("routes_file", "%s: %q: prefix %v already routed by %s", w, r.String(), r.Prefix, prev)
}

// ReadRoutesFile reads a routes file (the routes_file syntax), with errors
// naming file:line.
func ReadRoutesFile(file string) ([]Route, error) {
	rs, err := parseRouteSet(nil, file, 0)
	if err != nil {
		return nil, err
	}
	return rs.routes, nil
}
