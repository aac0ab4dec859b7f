package host

import (
	"bytes"
	"strings"
	"testing"
)

// TestLineLoggerBounded: a plugin writing megabytes to standard error
// without a newline costs the host at most one line of buffer, and the log
// gets lines of at most maxLogLine bytes; ordinary lines pass unchanged.
func TestLineLoggerBounded(t *testing.T) {
	var out bytes.Buffer
	SetLog(&out)
	defer SetLog(&bytes.Buffer{})
	l := &lineLogger{prefix: "p: "}
	chunk := bytes.Repeat([]byte("x"), 64<<10)
	for i := 0; i < 64; i++ { // 4 MiB, one line
		l.Write(chunk)
		if cap(l.buf) > 2*maxLogLine {
			t.Fatalf("buffer grew to %d bytes", cap(l.buf))
		}
	}
	l.Write([]byte("\nhello\r\nwor"))
	l.Write([]byte("ld\npartial"))
	l.flush()
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	if len(lines) != 4 {
		t.Fatalf("%d log lines, want 4:\n%.300s", len(lines), out.String())
	}
	if !strings.HasSuffix(lines[0], "p: "+strings.Repeat("x", maxLogLine)+" [line cut]") {
		t.Errorf("overlong line logged as %.80s… (%d bytes)", lines[0], len(lines[0]))
	}
	for i, want := range []string{"p: hello", "p: world", "p: partial"} {
		if !strings.HasSuffix(lines[i+1], want) {
			t.Errorf("line %d = %q, want suffix %q", i+1, lines[i+1], want)
		}
	}
}
