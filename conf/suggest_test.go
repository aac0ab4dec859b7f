package conf

import "testing"

func TestDistance(t *testing.T) {
	for _, c := range []struct {
		a, b string
		want int
	}{
		{"", "", 0}, {"tcp", "tcp", 0}, {"tpc", "tcp", 1}, {"wrokers", "workers", 1},
		{"rotes", "routes", 1}, {"kitten", "sitting", 3}, {"", "abc", 3}, {"ca", "abc", 3},
	} {
		if got := Distance(c.a, c.b, 100); got != c.want {
			t.Errorf("Distance(%q, %q) = %d, want %d", c.a, c.b, got, c.want)
		}
	}
	if got := Distance("kitten", "sitting", 2); got != 2 {
		t.Errorf("bounded distance = %d, want the bound 2", got)
	}
}

func TestNearest(t *testing.T) {
	types := []string{"Classifier", "CheckIPHeader", "DecTTL", "Discard", "IPLookup"}
	for _, c := range []struct{ name, want string }{
		{"DecTL", "DecTTL"}, {"discard", "Discard"}, {"CheckIPHeadr", "CheckIPHeader"},
		{"Clasifier", "Classifier"}, {"Foo", ""}, {"", ""}, {"IPLookup", ""},
	} {
		if got := Nearest(c.name, types); got != c.want {
			t.Errorf("Nearest(%q) = %q, want %q", c.name, got, c.want)
		}
	}
}
