package ip

// tokenBucket limits the ICMP errors (ICMPError, ICMP6Error) one worker
// sends, as Linux's icmp_ratelimit does. It counts nanotokens (1e9 per
// token) so that a refill needs no division: rate tokens per second is
// rate nanotokens per nanosecond. rate 0: no limit.
type tokenBucket struct {
	rate, max, tokens int64
	last              int64
	started           bool
}

func newTokenBucket(rate, burst int) tokenBucket {
	return tokenBucket{rate: int64(rate), max: int64(burst) * nanoPerToken, tokens: int64(burst) * nanoPerToken}
}

// limited reports whether the bucket has a rate at all.
func (tb *tokenBucket) limited() bool { return tb.rate > 0 }

// refill adds the tokens earned since the last batch.
func (tb *tokenBucket) refill(now int64) {
	if !tb.started {
		tb.started, tb.last = true, now
		return
	}
	d := now - tb.last
	tb.last = now
	if d <= 0 {
		return
	}
	// Cap d first so that d*rate cannot overflow (max <= 1e15, rate <= 1e9).
	if d >= tb.max/tb.rate+1 {
		tb.tokens = tb.max
		return
	}
	tb.tokens += d * tb.rate
	if tb.tokens > tb.max {
		tb.tokens = tb.max
	}
}

// take spends one token, or reports that there is none.
func (tb *tokenBucket) take() bool {
	if tb.tokens < nanoPerToken {
		return false
	}
	tb.tokens -= nanoPerToken
	return true
}
