package graphfile

import (
	"fmt"
	"strconv"
	"strings"
)

// A link string is a chain in Click's syntax:
//
//	chain    := endpoint ( "->" endpoint )*
//	endpoint := [ "[" port "]" ] spec [ "[" port "]" ]
//	spec     := name | "/" name | name "::" Type [ "(" args ")" ] | Type "(" args ")" | Type
//	port     := number | name
//
// The port before a spec is the input port of that element, the port after
// it the output port; both default to 0. A port is named ("lan[arp]") only
// on a compound element, whose definition names its ports, and "/name"
// names from inside a compound an element of the file's top level
// (compound.go).

// endpoint is one element of a chain, as written.
type endpoint struct {
	InPort  int // -1: not written
	OutPort int // -1: not written
	// InName, OutName: a port written by name (InPort, OutPort are then 0).
	InName, OutName string
	Abs             bool // "/name": an element of the file's top level
	Name            string
	Type            string // after "::", or "" when the spec has none
	Decl            bool   // name :: Type
	HasArgs         bool   // "(" ... ")" was written
	Args            []string
}

// maxPort bounds port numbers so that a typo cannot ask for a huge table.
const maxPort = 1 << 16

// parseLink parses one link string into its chain of endpoints.
func parseLink(s string) ([]endpoint, error) {
	p := &linkParser{s: s}
	var chain []endpoint
	for {
		ep, err := p.endpoint()
		if err != nil {
			return nil, err
		}
		chain = append(chain, ep)
		p.space()
		if p.eof() {
			break
		}
		if !strings.HasPrefix(p.s[p.i:], "->") {
			return nil, p.errorf("expected \"->\"")
		}
		p.i += 2
	}
	if chain[0].InPort >= 0 {
		return nil, fmt.Errorf("input port %s before the first element %q: nothing links into it", portText(chain[0].InPort, chain[0].InName), chain[0].Name)
	}
	last := chain[len(chain)-1]
	if last.OutPort >= 0 {
		return nil, fmt.Errorf("output port %s after the last element %q: it links nowhere", portText(last.OutPort, last.OutName), last.Name)
	}
	if len(chain) == 1 && !last.Decl {
		return nil, fmt.Errorf("a link needs \"->\" (or is a declaration \"name :: Type\")")
	}
	return chain, nil
}

type linkParser struct {
	s string
	i int
}

func (p *linkParser) eof() bool { return p.i >= len(p.s) }

func (p *linkParser) space() {
	for p.i < len(p.s) && strings.IndexByte(" \t\r\n", p.s[p.i]) >= 0 {
		p.i++
	}
}

func (p *linkParser) errorf(format string, args ...any) error {
	msg := fmt.Sprintf(format, args...)
	if p.eof() {
		return fmt.Errorf("%s at end of link", msg)
	}
	rest := p.s[p.i:]
	if len(rest) > 20 {
		rest = rest[:20] + "..."
	}
	return fmt.Errorf("%s at column %d (%q)", msg, p.i+1, rest)
}

func isIdentStart(c byte) bool {
	return c == '_' || 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z'
}

func isIdentChar(c byte) bool { return isIdentStart(c) || '0' <= c && c <= '9' }

// ident reads a name: a letter or '_' first, then letters, digits, '_' and
// '-' (TOML bare keys allow '-'; a '-' that starts "->" ends the name).
func (p *linkParser) ident() (string, error) {
	p.space()
	if p.eof() || !isIdentStart(p.s[p.i]) {
		return "", p.errorf("expected an element name or type")
	}
	start := p.i
	for p.i < len(p.s) {
		c := p.s[p.i]
		if isIdentChar(c) || c == '-' && !strings.HasPrefix(p.s[p.i:], "->") {
			p.i++
			continue
		}
		break
	}
	return p.s[start:p.i], nil
}

// portText writes a port as it was written: "[2]" or "[arp]".
func portText(n int, name string) string {
	if name != "" {
		return "[" + name + "]"
	}
	return "[" + strconv.Itoa(n) + "]"
}

// port reads "[N]" or "[name]" if it is next; -1 if not. A named port is
// 0 with its name.
func (p *linkParser) port() (int, string, error) {
	p.space()
	if p.eof() || p.s[p.i] != '[' {
		return -1, "", nil
	}
	p.i++
	p.space()
	start := p.i
	if !p.eof() && isIdentStart(p.s[p.i]) {
		name, _ := p.ident()
		p.space()
		if p.eof() || p.s[p.i] != ']' {
			p.i = start
			return 0, "", p.errorf("a port is written [N] with N a number ≥ 0, or [name] on a compound element")
		}
		p.i++
		return 0, name, nil
	}
	for p.i < len(p.s) && '0' <= p.s[p.i] && p.s[p.i] <= '9' {
		p.i++
	}
	digits := p.s[start:p.i]
	p.space()
	if digits == "" || p.eof() || p.s[p.i] != ']' {
		p.i = start
		return 0, "", p.errorf("a port is written [N] with N a number ≥ 0, or [name] on a compound element")
	}
	p.i++
	n, err := strconv.Atoi(digits)
	if err != nil || n > maxPort {
		return 0, "", fmt.Errorf("port [%s] too large", digits)
	}
	return n, "", nil
}

func (p *linkParser) endpoint() (endpoint, error) {
	ep := endpoint{InPort: -1, OutPort: -1}
	var err error
	if ep.InPort, ep.InName, err = p.port(); err != nil {
		return ep, err
	}
	p.space()
	if !p.eof() && p.s[p.i] == '/' {
		p.i++
		ep.Abs = true
	}
	if ep.Name, err = p.ident(); err != nil {
		return ep, err
	}
	p.space()
	if strings.HasPrefix(p.s[p.i:], "::") {
		if ep.Abs {
			return ep, p.errorf("/%s names an element of the top level: a declaration names one of its own", ep.Name)
		}
		p.i += 2
		ep.Decl = true
		if ep.Type, err = p.ident(); err != nil {
			return ep, err
		}
		p.space()
	}
	if !p.eof() && p.s[p.i] == '(' {
		if ep.Abs {
			return ep, p.errorf("/%s names an element: arguments follow a type", ep.Name)
		}
		raw, err := p.parens()
		if err != nil {
			return ep, err
		}
		ep.HasArgs = true
		if ep.Args, err = splitArgs(raw); err != nil {
			return ep, err
		}
	}
	if ep.OutPort, ep.OutName, err = p.port(); err != nil {
		return ep, err
	}
	return ep, nil
}

// parens reads a parenthesised argument list starting at '(' and returns
// its contents. Parentheses nest; double-quoted strings (with backslash
// escapes) may hold anything.
func (p *linkParser) parens() (string, error) {
	open := p.i
	depth := 0
	for p.i < len(p.s) {
		switch c := p.s[p.i]; c {
		case '"':
			p.i++
			for p.i < len(p.s) && p.s[p.i] != '"' {
				if p.s[p.i] == '\\' {
					p.i++
				}
				p.i++
			}
			if p.i >= len(p.s) {
				p.i = open
				return "", p.errorf("unterminated string in arguments")
			}
		case '(':
			depth++
		case ')':
			depth--
			if depth == 0 {
				p.i++
				return p.s[open+1 : p.i-1], nil
			}
		}
		p.i++
	}
	p.i = open
	return "", p.errorf("unbalanced parentheses")
}

// splitArgs splits an argument list on top-level commas (not inside
// parentheses, brackets or double quotes) and trims each argument. An
// empty list (only spaces) has no arguments.
func splitArgs(s string) ([]string, error) {
	if strings.TrimSpace(s) == "" {
		return nil, nil
	}
	var args []string
	depth, start := 0, 0
	for i := 0; i < len(s); i++ {
		switch s[i] {
		case '"':
			for i++; i < len(s) && s[i] != '"'; i++ {
				if s[i] == '\\' {
					i++
				}
			}
			if i >= len(s) {
				return nil, fmt.Errorf("unterminated string in arguments")
			}
		case '(', '[':
			depth++
		case ')', ']':
			depth--
			if depth < 0 {
				return nil, fmt.Errorf("unbalanced parentheses or brackets in arguments")
			}
		case ',':
			if depth == 0 {
				args = append(args, strings.TrimSpace(s[start:i]))
				start = i + 1
			}
		}
	}
	if depth != 0 {
		return nil, fmt.Errorf("unbalanced parentheses or brackets in arguments")
	}
	args = append(args, strings.TrimSpace(s[start:]))
	for i, a := range args {
		if a == "" {
			return nil, fmt.Errorf("argument %d is empty", i+1)
		}
	}
	return args, nil
}
