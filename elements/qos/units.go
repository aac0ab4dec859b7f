package qos

import (
	"fmt"
	"math"
	"strconv"
	"strings"
)

// Rate is a rate in bits per second. As text it takes a number and a unit,
// as tc and RouterOS write them: "20Mbit", "1.5Gbit", "800kbit", "20M",
// "64000" (bit/s). Units are decimal (k = 1000) and case-insensitive:
// bit, kbit, mbit, gbit, tbit, the same with "bps" for "bit", and the bare
// prefixes k, m, g, t. Bytes per second are not taken: tc's "kbps" means
// kilobytes, other tools' means kilobits, so "bps" here is bits and the
// manual says so.
type Rate uint64

// MaxRate is the highest rate a key takes: the fastest Ethernet link (400
// Gbit/s). A rate beyond every link is a typo, not a limit.
const MaxRate = 400_000_000_000

var rateUnits = map[string]float64{
	"": 1, "bit": 1, "bps": 1,
	"k": 1e3, "kbit": 1e3, "kbps": 1e3,
	"m": 1e6, "mbit": 1e6, "mbps": 1e6,
	"g": 1e9, "gbit": 1e9, "gbps": 1e9,
	"t": 1e12, "tbit": 1e12, "tbps": 1e12,
}

// UnmarshalText parses a rate.
func (r *Rate) UnmarshalText(b []byte) error {
	v, err := parseUnits(string(b), rateUnits, "a rate such as 20Mbit, 1.5Gbit, 800kbit")
	if err != nil {
		return err
	}
	*r = Rate(v)
	return nil
}

// String writes the rate with the largest unit that keeps it whole.
func (r Rate) String() string {
	return formatUnits(uint64(r), []unit{{1e12, "Tbit"}, {1e9, "Gbit"}, {1e6, "Mbit"}, {1e3, "kbit"}}, "bit")
}

// Size is a number of bytes. As text: "1500", "64KB" or "64k" (decimal, k
// = 1000), "64KiB" (binary, 1024), "1MB", "1MiB"; case-insensitive.
type Size uint64

// MaxBurst bounds a burst: 256 MiB, far beyond any useful one, small
// enough that credits (8e9 per byte) cannot overflow.
const MaxBurst = 256 << 20

var sizeUnits = map[string]float64{
	"": 1, "b": 1,
	"k": 1e3, "kb": 1e3, "kib": 1 << 10,
	"m": 1e6, "mb": 1e6, "mib": 1 << 20,
	"g": 1e9, "gb": 1e9, "gib": 1 << 30,
}

// UnmarshalText parses a size.
func (s *Size) UnmarshalText(b []byte) error {
	v, err := parseUnits(string(b), sizeUnits, "a size in bytes such as 1500, 64KB, 64KiB")
	if err != nil {
		return err
	}
	*s = Size(v)
	return nil
}

// String writes the size in bytes, or in kB/MB when whole.
func (s Size) String() string {
	return formatUnits(uint64(s), []unit{{1e6, "MB"}, {1e3, "KB"}}, "")
}

type unit struct {
	n    uint64
	name string
}

func formatUnits(v uint64, units []unit, base string) string {
	for _, u := range units {
		if v >= u.n && v%u.n == 0 {
			return strconv.FormatUint(v/u.n, 10) + u.name
		}
	}
	return strconv.FormatUint(v, 10) + base
}

// parseUnits reads a non-negative number followed by one of units (an
// optional "/s" after it is ignored) and returns it as a whole number.
func parseUnits(s string, units map[string]float64, want string) (uint64, error) {
	t := strings.ToLower(strings.TrimSpace(s))
	t = strings.TrimSuffix(t, "/s")
	i := 0
	for i < len(t) && (t[i] >= '0' && t[i] <= '9' || t[i] == '.' || t[i] == '_' || t[i] == '-' || t[i] == '+') {
		i++
	}
	num, u := strings.ReplaceAll(t[:i], "_", ""), strings.TrimSpace(t[i:])
	if num == "" {
		return 0, fmt.Errorf("%q: want %s", s, want)
	}
	mult, ok := units[u]
	if !ok {
		return 0, fmt.Errorf("%q: unknown unit %q: want %s", s, u, want)
	}
	f, err := strconv.ParseFloat(num, 64)
	if err != nil || math.IsNaN(f) || math.IsInf(f, 0) {
		return 0, fmt.Errorf("%q: want %s", s, want)
	}
	if f < 0 {
		return 0, fmt.Errorf("%q: negative", s)
	}
	v := math.Round(f * mult)
	if v >= 1<<63 {
		return 0, fmt.Errorf("%q: too large", s)
	}
	return uint64(v), nil
}

// DSCP is a differentiated services code point (RFC 2474), 0..63. As text
// it takes a number or a name: ef (46), va (44), cs0..cs7, af11..af43,
// be or default (0).
type DSCP uint8

// UnmarshalText parses a DSCP.
func (d *DSCP) UnmarshalText(b []byte) error {
	v, err := parseDSCP(string(b))
	if err != nil {
		return err
	}
	*d = DSCP(v)
	return nil
}

func parseDSCP(s string) (uint8, error) {
	t := strings.ToLower(strings.TrimSpace(s))
	switch t {
	case "ef":
		return 46, nil // RFC 3246
	case "va", "voice-admit":
		return 44, nil // RFC 5865
	case "be", "default", "df":
		return 0, nil
	}
	if len(t) == 3 && t[:2] == "cs" && t[2] >= '0' && t[2] <= '7' {
		return (t[2] - '0') << 3, nil // RFC 2474 class selectors
	}
	if len(t) == 4 && t[:2] == "af" && t[2] >= '1' && t[2] <= '4' && t[3] >= '1' && t[3] <= '3' {
		return (t[2]-'0')<<3 | (t[3]-'0')<<1, nil // RFC 2597: class, drop precedence
	}
	n, err := strconv.ParseUint(t, 0, 8)
	if err != nil || n > 63 {
		return 0, fmt.Errorf("%q: want a DSCP 0..63 or a name (ef, va, cs0..cs7, af11..af43, be)", s)
	}
	return uint8(n), nil
}

// share says how a rate is divided between workers.
const (
	shareSplit = "split"
	shareEach  = "each"
)

// checkShare validates a share key.
func checkShare(s string) error {
	if s != shareSplit && s != shareEach {
		return fmt.Errorf("%q: want %q (each worker gets rate/workers) or %q (each worker gets the whole rate)", s, shareSplit, shareEach)
	}
	return nil
}

// checkRate refuses a rate of 0 and one beyond MaxRate.
func checkRate(r Rate) error {
	if r == 0 {
		return fmt.Errorf("0: a rate of 0 passes nothing (end the branch in a Discard instead)")
	}
	if r > MaxRate {
		return fmt.Errorf("%s: beyond the fastest link (%s)", r, Rate(MaxRate))
	}
	return nil
}
