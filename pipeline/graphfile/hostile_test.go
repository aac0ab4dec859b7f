package graphfile

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
	"testing"
	"time"
)

// The hostile corpus: graph files built to exhaust the loader (deeply
// nested values, huge strings and arrays, endless input), generated here
// rather than committed. Each must be refused — or, for the line tests,
// reported at the right line — within a time and memory bound, with an
// error naming the line and the limit.

// parseBounded parses data as "h.toml" in a goroutine and fails if it
// takes longer than limit or allocates more than maxAlloc bytes; it
// returns the error list (nil for a valid graph).
func parseBounded(t *testing.T, data []byte, limit time.Duration, maxAlloc uint64) ErrorList {
	t.Helper()
	type result struct {
		err   error
		alloc uint64
		took  time.Duration
	}
	done := make(chan result, 1)
	go func() {
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		start := time.Now()
		_, err := Parse("h.toml", data)
		took := time.Since(start)
		runtime.ReadMemStats(&after)
		done <- result{err, after.TotalAlloc - before.TotalAlloc, took}
	}()
	var r result
	select {
	case r = <-done:
	case <-time.After(limit):
		t.Fatalf("Parse of %d bytes still running after %v", len(data), limit)
	}
	t.Logf("%d bytes: %v, %d KB allocated", len(data), r.took.Round(time.Millisecond), r.alloc>>10)
	if r.alloc > maxAlloc {
		t.Errorf("Parse of %d bytes allocated %d MB, want at most %d MB", len(data), r.alloc>>20, maxAlloc>>20)
	}
	if r.err == nil {
		return nil
	}
	var list ErrorList
	if !errors.As(r.err, &list) {
		t.Fatalf("error %T: %v", r.err, r.err)
	}
	return list
}

// budget is the time each hostile file may take: generous for a loaded
// machine, far below the seconds to minutes they took before the limits.
const budget = 3 * time.Second

func nest(open, close string, d int, inner string) string {
	return strings.Repeat(open, d) + inner + strings.Repeat(close, d)
}

func TestHostileCorpus(t *testing.T) {
	head := "[forwarder]\nworkers = 1\n"
	tail := "\n[graph]\nlinks = [\"a -> b\"]\n"
	manyKeys := func(n int) string {
		var b strings.Builder
		b.WriteString("[elements.k]\n")
		for i := range n {
			fmt.Fprintf(&b, "k%d=1\n", i)
		}
		return b.String()
	}
	longArray := func(n int) string {
		var b strings.Builder
		b.WriteString("x = [\n")
		for range n {
			b.WriteString("1,\n")
		}
		b.WriteString("]\n")
		return b.String()
	}
	for _, tc := range []struct {
		name string
		src  string
		want string // the first error
	}{
		// 7 s at depth 1000, > 120 s at depth 3000 before the limits.
		{"inline tables 3000 deep", head + "x = " + nest("{a=", "}", 3000, "1") + tail, "h.toml:3: nested more than 32 levels deep (MaxDepth)"},
		{"inline tables 10000 deep", head + "x = " + nest("{a=", "}", 10000, "1") + tail, "h.toml:3: nested more than 32 levels deep (MaxDepth)"},
		{"arrays 100000 deep", head + "x = " + nest("[", "]", 100000, "1") + tail, "h.toml:3: nested more than 32 levels deep (MaxDepth)"},
		{"arrays 100000 deep, unclosed", head + "x = " + strings.Repeat("[", 100000), "h.toml:3: nested more than 32 levels deep (MaxDepth)"},
		{"dotted key 10000 parts", head + "x" + strings.Repeat(".a", 10000) + " = 1" + tail, "h.toml:3: nested more than 32 levels deep (MaxDepth)"},
		{"table header 10000 parts", head + "[x" + strings.Repeat(".a", 10000) + "]\n" + tail, "h.toml:3: nested more than 32 levels deep (MaxDepth)"},
		{"array of tables 10000 parts", head + "[[x" + strings.Repeat(".a", 10000) + "]]\n" + tail, "h.toml:3: nested more than 32 levels deep (MaxDepth)"},
		{"inline tables in arrays", head + "x = " + nest("[{a=", "}]", 5000, "1") + tail, "h.toml:3: nested more than 32 levels deep (MaxDepth)"},
		{"10 MB string", "[devices.d]\ndriver = \"testld\"\nmac = \"" + strings.Repeat("a", 10<<20) + "\"\n" + tail, "h.toml:1: file is 10485827 bytes: at most 4194304 (MaxFileSize)"},
		{"100 KB string", "[devices.d]\ndriver = \"testld\"\nmac = \"" + strings.Repeat("a", 100<<10) + "\"\n" + tail, "h.toml:3: string of 102402 bytes: at most 65536 (MaxStringLen)"},
		{"100 KB multi-line string", "[devices.d]\ndriver = \"testld\"\nmac = '''\n" + strings.Repeat("a\n", 50<<10) + "'''\n" + tail, "h.toml:3: string of 102407 bytes: at most 65536 (MaxStringLen)"},
		{"100 KB key", head + strings.Repeat("k", 100<<10) + " = 1" + tail, "h.toml:3: word of 102400 bytes: at most 65536 (MaxStringLen)"},
		{"100 KB number", head + "x = " + strings.Repeat("1", 100<<10) + tail, "h.toml:3: word of 102400 bytes: at most 65536 (MaxStringLen)"},
		{"array of 70000 items", head + longArray(70000) + tail, "h.toml:3: array of more than 65536 items (MaxArrayLen)"},
		{"300000 keys", manyKeys(300000) + tail, "h.toml:131074: more than 131072 keys and array items in the file (MaxValues)"},
		{"[[tables]] 300000 times", strings.Repeat("[[x]]\n", 300000) + tail, "h.toml:131073: more than 131072 keys and array items in the file (MaxValues)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			list := parseBounded(t, []byte(tc.src), budget, 64<<20+4*uint64(len(tc.src)))
			if len(list) == 0 || list[0].Error() != tc.want {
				t.Fatalf("errors:\n%.2000s\nwant first: %s", list.Error(), tc.want)
			}
		})
	}
}

// TestHostileLimitsAreExact: a file at each limit loads; one step beyond
// is refused (the limits are what limits.go says, not roughly).
func TestHostileLimitsAreExact(t *testing.T) {
	graph := dev + "[graph]\nlinks = [" + okLink + "]\n"
	// Depth is a property of the text: [elements.x] is 2 levels, key z
	// 3, each {a= one more.
	at := func(d int) string {
		return graph + "[elements.x]\ntype = \"TestLdKinds\"\nz = " + nest("{a=", "}", d-3, "1") + "\n"
	}
	if list := parseBounded(t, []byte(at(MaxDepth)), budget, 64<<20); len(list) == 0 || strings.Contains(list.Error(), "MaxDepth") {
		t.Errorf("depth %d: %v, want other errors only", MaxDepth, list)
	}
	if list := parseBounded(t, []byte(at(MaxDepth+1)), budget, 64<<20); len(list) != 1 || !strings.Contains(list.Error(), "MaxDepth") {
		t.Errorf("depth %d: %v, want the depth limit", MaxDepth+1, list)
	}
	str := func(n int) string {
		return graph + "[elements.x]\ntype = \"TestLdKinds\"\ns = \"" + strings.Repeat("x", n) + "\"\n"
	}
	if list := parseBounded(t, []byte(str(MaxStringLen-2)), budget, 64<<20); strings.Contains(list.Error(), "Max") {
		t.Errorf("string of %d bytes: %v", MaxStringLen, list)
	}
	if list := parseBounded(t, []byte(str(MaxStringLen-1)), budget, 64<<20); len(list) != 1 || !strings.Contains(list.Error(), "MaxStringLen") {
		t.Errorf("string of %d bytes: %v, want the string limit", MaxStringLen+1, list)
	}
	arr := func(n int) string {
		return graph + "[elements.x]\ntype = \"TestLdKinds\"\nii = [" + strings.Repeat("1,", n) + "]\n"
	}
	if list := parseBounded(t, []byte(arr(MaxArrayLen)), budget, 128<<20); strings.Contains(list.Error(), "Max") {
		t.Errorf("array of %d items: %v", MaxArrayLen, list)
	}
	if list := parseBounded(t, []byte(arr(MaxArrayLen+1)), budget, 128<<20); len(list) != 1 || !strings.Contains(list.Error(), "MaxArrayLen") {
		t.Errorf("array of %d items: %v, want the array limit", MaxArrayLen+1, list)
	}
}

// TestHostileEntryLine: a bad item among 60,000 is reported at its own
// line, not at the line of the key, within the time budget.
func TestHostileEntryLine(t *testing.T) {
	var b strings.Builder
	b.WriteString(dev + "[graph]\nlinks = [" + okLink + "]\n[elements.x]\ntype = \"TestLdKinds\"\nii = [\n")
	for i := range 60000 {
		if i == 40000 {
			b.WriteString("\"forty thousand\",\n")
			continue
		}
		b.WriteString("1,\n")
	}
	b.WriteString("]\n")
	list := parseBounded(t, []byte(b.String()), budget, 128<<20)
	want := []string{`h.toml:40008: element "x" (TestLdKinds): key "ii": item 40001: want integer, got string "forty thousand"`}
	checkErrors(t, list, want)
}

// TestHostileQuoting: a value quoted in an error is cut to MaxQuoted bytes,
// whoever builds the message.
func TestHostileQuoting(t *testing.T) {
	long := strings.Repeat("a", 60000)
	src := "[devices.d]\ndriver = \"testld\"\nmac = \"" + long + "\"\naddresses = [\"" + long + "\"]\n" +
		"[elements.x]\ntype = \"TestLdKinds\"\nd = \"" + long + "\"\na = \"" + long + "\"\n" +
		"[elements.r]\ntype = \"TestLdRoute\"\nroutes = [\"" + long + "\"]\n" +
		"[graph]\nlinks = [" + okLink + "]\n"
	list := parseBounded(t, []byte(src), budget, 64<<20)
	if len(list) != 5 {
		t.Fatalf("%d errors, want 5:\n%v", len(list), list)
	}
	for _, e := range list {
		if s := e.Error(); len(s) > 400 || !strings.Contains(s, `"`+strings.Repeat("a", MaxQuoted)+`"... (60000 bytes)`) {
			t.Errorf("error of %d bytes (want ≤ 400, quoting %d bytes of the value): %.300s", len(s), MaxQuoted, s)
		}
	}
}

// TestHostileErrorCount: thousands of errors are cut to MaxErrors and a
// line that says how many more there were.
func TestHostileErrorCount(t *testing.T) {
	var b strings.Builder
	b.WriteString("[forwarder]\n")
	for i := range 5000 {
		fmt.Fprintf(&b, "bad%d = 1\n", i)
	}
	b.WriteString("[graph]\nlinks = [" + okLink + "]\n" + dev)
	list := parseBounded(t, []byte(b.String()), budget, 256<<20)
	if len(list) != MaxErrors+1 || !strings.Contains(list[MaxErrors].Error(), "h.toml:102: and 4900 more errors from here on (at most 100 are reported: MaxErrors)") {
		t.Fatalf("%d errors, last %v", len(list), list[len(list)-1])
	}
}

// TestHostileLoadEndless: Load does not read an endless device.
func TestHostileLoadEndless(t *testing.T) {
	if _, err := os.Stat("/dev/zero"); err != nil {
		t.Skip("no /dev/zero")
	}
	done := make(chan error, 1)
	go func() {
		_, err := Load("/dev/zero")
		done <- err
	}()
	select {
	case err := <-done:
		if err == nil || err.Error() != "/dev/zero:1: not a regular file but a character device" {
			t.Fatalf("Load(/dev/zero): %v", err)
		}
	case <-time.After(budget):
		t.Fatal("Load(/dev/zero) still reading")
	}
}

// TestHostileLoadFIFO: a graph file that is a FIFO is refused at once,
// with or without a writer, instead of blocking the open (no writer) or
// the read (a writer that sends nothing).
func TestHostileLoadFIFO(t *testing.T) {
	fifo := filepath.Join(t.TempDir(), "graph.toml")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	for _, writer := range []bool{false, true} {
		if writer {
			// A writer that holds the FIFO open and never writes.
			w, err := os.OpenFile(fifo, os.O_RDWR, 0)
			if err != nil {
				t.Fatal(err)
			}
			defer w.Close()
		}
		done := make(chan error, 1)
		go func() {
			_, err := Load(fifo)
			done <- err
		}()
		select {
		case err := <-done:
			if err == nil || err.Error() != fifo+":1: not a regular file but a FIFO" {
				t.Fatalf("writer %v: Load(FIFO): %v", writer, err)
			}
		case <-time.After(budget):
			t.Fatalf("writer %v: Load(FIFO) still blocked", writer)
		}
	}
}
