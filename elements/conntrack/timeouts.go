package conntrack

import (
	"fmt"
	"sort"
	"strconv"
	"strings"
	"time"
)

// Timeouts are how long a flow lives without packets, by protocol and
// state, in nanoseconds. The defaults are Linux's (net.netfilter.
// nf_conntrack_*_timeout*).
type Timeouts struct {
	TCP       [tcpStates]int64
	UDP       int64 // unreplied
	UDPStream int64 // replied (assured)
	ICMP      int64
	Generic   int64 // other IP protocols
}

// DefaultTimeouts returns Linux's defaults.
func DefaultTimeouts() Timeouts {
	s := int64(time.Second)
	var t Timeouts
	t.TCP = [tcpStates]int64{
		TCPNone:        10 * s,
		TCPSynSent:     120 * s,
		TCPSynRecv:     60 * s,
		TCPEstablished: 432000 * s, // 5 days
		TCPFinWait:     120 * s,
		TCPCloseWait:   60 * s,
		TCPLastAck:     30 * s,
		TCPTimeWait:    120 * s,
		TCPClose:       10 * s,
		TCPSynSent2:    120 * s,
	}
	t.UDP, t.UDPStream, t.ICMP, t.Generic = 30*s, 120*s, 30*s, 600*s
	return t
}

// timeoutKeys maps the names of the timeouts key to the field they set.
var timeoutKeys = map[string]func(t *Timeouts) *int64{
	"tcp_syn_sent":    func(t *Timeouts) *int64 { return &t.TCP[TCPSynSent] },
	"tcp_syn_recv":    func(t *Timeouts) *int64 { return &t.TCP[TCPSynRecv] },
	"tcp_established": func(t *Timeouts) *int64 { return &t.TCP[TCPEstablished] },
	"tcp_fin_wait":    func(t *Timeouts) *int64 { return &t.TCP[TCPFinWait] },
	"tcp_close_wait":  func(t *Timeouts) *int64 { return &t.TCP[TCPCloseWait] },
	"tcp_last_ack":    func(t *Timeouts) *int64 { return &t.TCP[TCPLastAck] },
	"tcp_time_wait":   func(t *Timeouts) *int64 { return &t.TCP[TCPTimeWait] },
	"tcp_close":       func(t *Timeouts) *int64 { return &t.TCP[TCPClose] },
	"tcp_syn_sent2":   func(t *Timeouts) *int64 { return &t.TCP[TCPSynSent2] },
	"udp":             func(t *Timeouts) *int64 { return &t.UDP },
	"udp_stream":      func(t *Timeouts) *int64 { return &t.UDPStream },
	"icmp":            func(t *Timeouts) *int64 { return &t.ICMP },
	"generic":         func(t *Timeouts) *int64 { return &t.Generic },
}

// TimeoutNames lists the names the timeouts key accepts.
func TimeoutNames() []string {
	var n []string
	for k := range timeoutKeys {
		n = append(n, k)
	}
	sort.Strings(n)
	return n
}

// parseTimeouts applies "name=duration" settings (Go durations, plus a
// "d" suffix for days) to the defaults.
func parseTimeouts(list []string) (Timeouts, error) {
	t := DefaultTimeouts()
	for _, s := range list {
		name, val, ok := strings.Cut(s, "=")
		name, val = strings.TrimSpace(name), strings.TrimSpace(val)
		if !ok {
			return t, fmt.Errorf("%q: want NAME=DURATION, e.g. udp=30s (names: %s)", s, strings.Join(TimeoutNames(), ", "))
		}
		f, found := timeoutKeys[strings.ToLower(name)]
		if !found {
			return t, fmt.Errorf("unknown timeout %q (names: %s)", name, strings.Join(TimeoutNames(), ", "))
		}
		d, err := parseDuration(val)
		if err != nil {
			return t, fmt.Errorf("%s: %v", name, err)
		}
		*f(&t) = int64(d)
	}
	return t, nil
}

func parseDuration(s string) (time.Duration, error) {
	if n, ok := strings.CutSuffix(s, "d"); ok {
		v, err := strconv.ParseFloat(n, 64)
		if err != nil || v <= 0 || v > 10000 {
			return 0, fmt.Errorf("bad duration %q", s)
		}
		return time.Duration(v * 24 * float64(time.Hour)), nil
	}
	d, err := time.ParseDuration(s)
	if err != nil || d <= 0 {
		return 0, fmt.Errorf("bad duration %q (want e.g. 30s, 2m, 5d)", s)
	}
	return d, nil
}

// of returns the timeout for a flow's current state.
func (t *Timeouts) of(c *Conn) int64 {
	switch c.T[0].Proto {
	case 6:
		return t.TCP[c.State%tcpStates]
	case 17:
		if c.Flags&FlagSeenReply != 0 {
			return t.UDPStream
		}
		return t.UDP
	case 1:
		return t.ICMP
	}
	return t.Generic
}
