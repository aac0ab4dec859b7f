package statstable

import (
	"strings"
	"testing"
)

func TestWrite(t *testing.T) {
	var b strings.Builder
	err := Write(&b, []bool{true, false, false}, [][]string{
		{"count", "element", "reason"},
		{"12345", "ToDevice(wan)@3", "ring full"},
		{"7", "rt", "no route"},
		{"1"}, // short rows are padded
	})
	want := "count  element          reason\n" +
		"12345  ToDevice(wan)@3  ring full\n" +
		"    7  rt               no route\n" +
		"    1\n"
	if err != nil || b.String() != want {
		t.Errorf("got %v\n%s\nwant\n%s", err, b.String(), want)
	}
}
