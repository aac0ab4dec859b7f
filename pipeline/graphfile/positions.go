package graphfile

import (
	"strconv"
	"strings"
)

// BurntSushi/toml v1.6.0 records a position for every key while parsing,
// but MetaData does not export it (only its own error messages use it). The
// loader therefore finds lines itself: positions scans the raw text — which
// toml has already accepted, so it is well formed — for table headers, keys
// (dotted, quoted, inside inline tables) and the items of arrays.

// positions maps TOML key paths to the lines where they were written.
type positions struct {
	keys  map[string]int   // pathKey(path) → line of the key or table header
	items map[string][]int // pathKey(path of an array) → line of each item
}

func pathKey(parts ...string) string { return strings.Join(parts, "\x00") }

// line returns the line of the key at path or, failing that, of the nearest
// enclosing table that has a known line; 0 if none.
func (p *positions) line(parts ...string) int {
	for n := len(parts); n > 0; n-- {
		if l, ok := p.keys[pathKey(parts[:n]...)]; ok {
			return l
		}
	}
	return 0
}

// item returns the line of item i of the array at path, or the array key's
// line.
func (p *positions) item(i int, parts ...string) int {
	if ls := p.items[pathKey(parts...)]; i >= 0 && i < len(ls) {
		return ls[i]
	}
	return p.line(parts...)
}

// set records line for path parts and for every prefix not yet known
// ([elements.rt] also opens "elements"). The keys are built in one buffer:
// the cost is the length of the path, not its square.
func (p *positions) set(line int, parts []string) {
	var b strings.Builder
	for n, part := range parts {
		if n > 0 {
			b.WriteByte(0)
		}
		b.WriteString(part)
		k := b.String()
		if _, ok := p.keys[k]; !ok {
			p.keys[k] = line
		}
	}
}

type tomlTokKind int

const (
	ttEOF tomlTokKind = iota
	ttNewline
	ttLBrack
	ttRBrack
	ttLBrace
	ttRBrace
	ttEq
	ttComma
	ttString
	ttBare
)

type tomlTok struct {
	kind tomlTokKind
	s    string // a string's value, a bare word's text
	line int
}

type tomlLexer struct {
	src     string
	i       int
	line    int
	lastLen int // bytes of the last string or bare word as written
}

// peek returns the next byte, 0 at the end.
func (lx *tomlLexer) peek() byte {
	if lx.i < len(lx.src) {
		return lx.src[lx.i]
	}
	return 0
}

func (lx *tomlLexer) next() tomlTok {
	for lx.i < len(lx.src) {
		c := lx.src[lx.i]
		switch c {
		case ' ', '\t', '\r':
			lx.i++
			continue
		case '#':
			for lx.i < len(lx.src) && lx.src[lx.i] != '\n' {
				lx.i++
			}
			continue
		case '\n':
			lx.i++
			lx.line++
			return tomlTok{kind: ttNewline, line: lx.line - 1}
		}
		t := tomlTok{line: lx.line}
		switch c {
		case '[':
			lx.i++
			t.kind = ttLBrack
		case ']':
			lx.i++
			t.kind = ttRBrack
		case '{':
			lx.i++
			t.kind = ttLBrace
		case '}':
			lx.i++
			t.kind = ttRBrace
		case '=':
			lx.i++
			t.kind = ttEq
		case ',':
			lx.i++
			t.kind = ttComma
		case '"', '\'':
			start := lx.i
			t.kind = ttString
			t.s = lx.str(c)
			lx.lastLen = lx.i - start
		default:
			start := lx.i
			for lx.i < len(lx.src) && !strings.ContainsRune(" \t\r\n[]{}=,#\"'", rune(lx.src[lx.i])) {
				lx.i++
			}
			t.kind = ttBare
			t.s = lx.src[start:lx.i]
			lx.lastLen = len(t.s)
		}
		return t
	}
	return tomlTok{kind: ttEOF, line: lx.line}
}

// str reads a string starting at lx.i with quote q (single- or multi-line)
// and returns its value (best effort: only keys need the exact value).
func (lx *tomlLexer) str(q byte) string {
	src := lx.src
	triple := strings.Repeat(string(q), 3)
	if strings.HasPrefix(src[lx.i:], triple) {
		lx.i += 3
		start := lx.i
		for lx.i < len(src) {
			if q == '"' && src[lx.i] == '\\' {
				lx.i += 2
				continue
			}
			if strings.HasPrefix(src[lx.i:], triple) {
				end := lx.i
				lx.i += 3
				// Up to two more quotes belong to the content.
				for k := 0; k < 2 && lx.i < len(src) && src[lx.i] == q; k++ {
					lx.i++
					end++
				}
				lx.countLines(start, lx.i)
				return src[start:min(end, len(src))]
			}
			lx.i++
		}
		lx.i = min(lx.i, len(src))
		lx.countLines(start, lx.i)
		return src[start:]
	}
	lx.i++
	start := lx.i
	for lx.i < len(src) && src[lx.i] != q && src[lx.i] != '\n' {
		if q == '"' && src[lx.i] == '\\' {
			lx.i++
		}
		lx.i++
	}
	lx.i = min(lx.i, len(src))
	raw := src[start:lx.i]
	if lx.i < len(src) && src[lx.i] == q {
		lx.i++
	}
	if q == '"' {
		if s, err := strconv.Unquote(`"` + raw + `"`); err == nil {
			return s
		}
	}
	return raw
}

func (lx *tomlLexer) countLines(from, to int) {
	lx.line += strings.Count(lx.src[from:min(to, len(lx.src))], "\n")
}

// scanPositions finds the line of every table header, key and array item
// of a TOML document.
func scanPositions(src string) *positions {
	p := &positions{keys: map[string]int{}, items: map[string][]int{}}
	lx := &tomlLexer{src: src, line: 1}
	var table []string
	tok := lx.next()
	for tok.kind != ttEOF {
		switch tok.kind {
		case ttLBrack: // [table] or [[array.of.tables]]
			line := tok.line
			tok = lx.next()
			if tok.kind == ttLBrack {
				tok = lx.next()
			}
			var parts []string
			parts, tok = keyParts(lx, tok)
			table = parts
			p.set(line, parts)
		case ttString, ttBare:
			line := tok.line
			var parts []string
			parts, tok = keyParts(lx, tok)
			if tok.kind != ttEq {
				break
			}
			full := append(append([]string(nil), table...), parts...)
			p.set(line, full)
			tok = scanValue(lx, p, full, lx.next())
		}
		// Skip the rest of the line.
		for tok.kind != ttNewline && tok.kind != ttEOF {
			tok = lx.next()
		}
		if tok.kind == ttNewline {
			tok = lx.next()
		}
	}
	return p
}

// keyParts reads a (dotted) key starting at tok and returns its parts and
// the token after it.
func keyParts(lx *tomlLexer, tok tomlTok) ([]string, tomlTok) {
	var parts []string
	for tok.kind == ttString || tok.kind == ttBare {
		if tok.kind == ttString {
			parts = append(parts, tok.s)
		} else {
			for _, s := range strings.Split(tok.s, ".") {
				if s = strings.TrimSpace(s); s != "" {
					parts = append(parts, s)
				}
			}
		}
		tok = lx.next()
	}
	return parts, tok
}

// scanValue reads the value starting at tok, recording the lines of the
// items of arrays and of the keys of inline tables under path, and returns
// the token after the value.
func scanValue(lx *tomlLexer, p *positions, path []string, tok tomlTok) tomlTok {
	skipNL := func(t tomlTok) tomlTok {
		for t.kind == ttNewline {
			t = lx.next()
		}
		return t
	}
	switch tok.kind {
	case ttLBrack:
		k := pathKey(path...)
		for i := 0; ; i++ {
			tok = skipNL(lx.next())
			if tok.kind == ttRBrack {
				return lx.next()
			}
			if tok.kind == ttEOF || tok.kind == ttComma {
				return tok // malformed; toml would have refused it
			}
			p.items[k] = append(p.items[k], tok.line)
			sub := append(append([]string(nil), path...), strconv.Itoa(i))
			tok = skipNL(scanValue(lx, p, sub, tok))
			if tok.kind == ttRBrack {
				return lx.next()
			}
			if tok.kind != ttComma {
				return tok
			}
		}
	case ttLBrace:
		for {
			tok = lx.next()
			if tok.kind == ttRBrace {
				return lx.next()
			}
			if tok.kind != ttString && tok.kind != ttBare {
				return tok
			}
			line := tok.line
			var parts []string
			parts, tok = keyParts(lx, tok)
			if tok.kind != ttEq {
				return tok
			}
			full := append(append([]string(nil), path...), parts...)
			p.set(line, full)
			tok = scanValue(lx, p, full, lx.next())
			if tok.kind == ttRBrace {
				return lx.next()
			}
			if tok.kind != ttComma {
				return tok
			}
		}
	case ttEOF, ttNewline:
		return tok
	default:
		first := tok
		tok = lx.next()
		// A local date-time may be written with a space: 1979-05-27 07:32:00.
		if first.kind == ttBare && tok.kind == ttBare && tok.line == first.line {
			tok = lx.next()
		}
		return tok
	}
}
