package graphfile

import (
	"fmt"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/junction-dataplane/junction/conf"
)

// Limits on graph files
//
// A graph file is input: it may be wrong, truncated or hostile, and loading
// it must take time and memory in proportion to its size, never more. The
// loader therefore refuses, with an error naming the file, the line and
// the limit, any file beyond these bounds (all far above what a real graph
// needs; a large route table belongs in a routes_file):
//
//	graph file size          MaxFileSize      4 MiB (also: read at most this much, so /dev/zero is refused)
//	nesting depth            MaxDepth         32 levels: table header parts, key parts (in inline tables too) and arrays
//	string, key or word      MaxStringLen     64 KiB
//	items in one array       MaxArrayLen      65,536
//	keys and items in total  MaxValues        131,072 (every key, array item and [[table]] header)
//	errors reported          MaxErrors        100 (then one line says how many more were found)
//
// The limits are checked by a linear pre-scan of the text before the TOML
// decoder sees it: a depth bomb is slow inside the decoder itself
// (BurntSushi/toml v1.6.0 decodes inline tables nested 3,000 deep in 2.7 s,
// 10,000 deep in 27 s). Values
// quoted in error messages are cut to MaxQuoted bytes. Elements bound what
// they read themselves:
//
//	IPLookup routes_file     a regular file of at most ip.MaxRoutesFileSize (256 MiB), lines of at most 1 KiB,
//	                         at most max_routes routes
//	Classifier rules         at most 1,024 rules per Classifier (its decision graph grows faster than the rule count)
const (
	MaxFileSize  = 4 << 20
	MaxDepth     = 32
	MaxStringLen = 64 << 10
	MaxArrayLen  = 1 << 16
	MaxValues    = 1 << 17
	MaxErrors    = 100
	MaxQuoted    = conf.MaxQuoted
)

// limitError is a bound the graph file exceeds, at a line.
type limitError struct {
	line int
	msg  string
}

// checkLimits scans src once, without recursion, and returns the first
// limit it exceeds (nil if none). It relies on nothing being well formed:
// it runs before the TOML decoder, which reports syntax errors.
func checkLimits(src string) *limitError {
	if len(src) > MaxFileSize {
		return &limitError{1, fmt.Sprintf("file is %d bytes: at most %d (MaxFileSize)", len(src), MaxFileSize)}
	}
	var (
		lx       = &tomlLexer{src: src, line: 1}
		stack    []openValue
		depth    int    // table parts + statement key parts + open arrays + inline table key parts
		stmtKey  int    // parts of the current statement's key
		values   int    // keys, items and [[headers]] so far
		keyPos   = true // the next word starts a key
		inHeader bool
		hdrParts int
		hdrLine  int
	)
	tooDeep := func(line int) *limitError {
		return &limitError{line, fmt.Sprintf("nested more than %d levels deep (MaxDepth)", MaxDepth)}
	}
	count := func(line int) *limitError {
		if values++; values > MaxValues {
			return &limitError{line, fmt.Sprintf("more than %d keys and array items in the file (MaxValues)", MaxValues)}
		}
		return nil
	}
	// item counts a value starting inside an array.
	item := func(line int) *limitError {
		n := len(stack)
		if n == 0 || !stack[n-1].array || !stack[n-1].expect {
			return nil
		}
		top := &stack[n-1]
		top.expect = false
		if top.items++; top.items > MaxArrayLen {
			return &limitError{top.line, fmt.Sprintf("array of more than %d items (MaxArrayLen)", MaxArrayLen)}
		}
		return count(line)
	}
	for {
		tok := lx.next()
		if tok.kind == ttEOF {
			return nil
		}
		if (tok.kind == ttString || tok.kind == ttBare) && lx.lastLen > MaxStringLen {
			what := "string"
			if tok.kind == ttBare {
				what = "word"
			}
			return &limitError{tok.line, fmt.Sprintf("%s of %d bytes: at most %d (MaxStringLen)", what, lx.lastLen, MaxStringLen)}
		}
		if inHeader {
			switch tok.kind {
			case ttString, ttBare:
				hdrParts += keyPartCount(tok)
			case ttRBrack, ttNewline:
				if tok.kind == ttRBrack && lx.peek() == ']' {
					continue // the first ] of [[header]]
				}
				inHeader = false
				depth, stmtKey = hdrParts, 0
				if depth > MaxDepth {
					return tooDeep(hdrLine)
				}
				keyPos = tok.kind == ttNewline
			}
			continue
		}
		switch tok.kind {
		case ttNewline:
			if len(stack) == 0 {
				keyPos = true
				depth -= stmtKey
				stmtKey = 0
			}
		case ttLBrack:
			if len(stack) == 0 && keyPos {
				// A [table] or [[array.of.tables]] header.
				inHeader, hdrParts, hdrLine = true, 0, tok.line
				depth -= stmtKey
				stmtKey = 0
				if lx.peek() == '[' {
					lx.i++
					if err := count(tok.line); err != nil {
						return err
					}
				}
				continue
			}
			if err := item(tok.line); err != nil {
				return err
			}
			stack = append(stack, openValue{array: true, expect: true, line: tok.line})
			if depth++; depth > MaxDepth {
				return tooDeep(tok.line)
			}
			keyPos = false
		case ttLBrace:
			if err := item(tok.line); err != nil {
				return err
			}
			// An inline table adds no level of its own: its keys do, as
			// x = {a = 1} is x.a = 1.
			stack = append(stack, openValue{line: tok.line})
			keyPos = true
		case ttRBrack, ttRBrace:
			if n := len(stack); n > 0 {
				top := stack[n-1]
				depth -= top.key
				if top.array {
					depth--
				}
				stack = stack[:n-1]
			}
			keyPos = false
		case ttComma:
			if n := len(stack); n > 0 {
				top := &stack[n-1]
				if top.array {
					top.expect = true
				} else {
					depth -= top.key
					top.key = 0
					keyPos = true
				}
			}
		case ttEq:
			keyPos = false
		case ttString, ttBare:
			if !keyPos {
				if err := item(tok.line); err != nil {
					return err
				}
				continue
			}
			if err := count(tok.line); err != nil {
				return err
			}
			parts := keyPartCount(tok)
			if n := len(stack); n > 0 {
				stack[n-1].key += parts
			} else {
				stmtKey += parts
			}
			if depth += parts; depth > MaxDepth {
				return tooDeep(tok.line)
			}
		}
	}
}

// openValue is an array or inline table open at some point of the scan.
type openValue struct {
	array  bool
	expect bool // array: the next value starts an item
	line   int
	items  int // array: items so far
	key    int // inline table: parts of the key being read
}

// keyPartCount is the number of parts a key token adds: a quoted key is
// one part, a bare one as many as it has non-empty dot-separated parts
// ("." alone, between quoted parts, adds none).
func keyPartCount(tok tomlTok) int {
	if tok.kind == ttString {
		return 1
	}
	n, inPart := 0, false
	for i := 0; i < len(tok.s); i++ {
		if tok.s[i] == '.' {
			inPart = false
		} else if !inPart {
			inPart = true
			n++
		}
	}
	return n
}

// quoteValue quotes s for an error message (conf.Quote).
func quoteValue(s string) string { return conf.Quote(s) }

// maxMsg bounds one error message: a message built by an element may quote
// a long value without cutting it.
const maxMsg = 1024

// clipMessage cuts every Go-quoted string longer than MaxQuoted bytes in
// msg (as quoteValue does), then the message itself to maxMsg bytes.
func clipMessage(msg string) string {
	if len(msg) <= MaxQuoted+2 {
		return msg
	}
	var b strings.Builder
	for i := 0; i < len(msg); {
		if msg[i] != '"' {
			b.WriteByte(msg[i])
			i++
			continue
		}
		end := quotedEnd(msg, i)
		if end < 0 {
			b.WriteString(msg[i:])
			break
		}
		q := msg[i:end]
		if s, err := strconv.Unquote(q); err == nil && len(s) > MaxQuoted {
			q = quoteValue(s)
		}
		b.WriteString(q)
		i = end
	}
	out := b.String()
	if len(out) > maxMsg {
		cut := maxMsg
		for cut > 0 && !utf8.RuneStart(out[cut]) {
			cut--
		}
		out = fmt.Sprintf("%s... (message of %d bytes cut)", out[:cut], len(out))
	}
	return out
}

// quotedEnd returns the index just past the Go-quoted string starting at
// msg[i] == '"', or -1 if it does not end.
func quotedEnd(msg string, i int) int {
	for j := i + 1; j < len(msg); j++ {
		switch msg[j] {
		case '\\':
			j++
		case '"':
			return j + 1
		}
	}
	return -1
}
