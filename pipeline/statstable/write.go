package statstable

import "io"

// Write lays out rows in columns as Render does (two spaces between
// columns, trailing blanks trimmed): a column is right-aligned where
// right says so (numbers), else left-aligned. The first row is normally
// the header. Tables printed beside Render's (forwarder show errors) use
// it so that all read alike.
func Write(w io.Writer, right []bool, rows [][]string) error {
	t := &textTable{right: make([]bool, 0, len(right))}
	t.right = append(t.right, right...)
	for _, r := range rows {
		cells := make([]string, len(right))
		copy(cells, r)
		t.row(cells...)
	}
	return t.write(w)
}
