package graphfile

import nearest "github.com/junction-dataplane/junction/internal/suggest"

// suggest returns the candidate nearest to name, or "" when none is near
// enough to be a plausible typo (see internal/suggest).
func suggest(name string, candidates []string) string {
	return nearest.Nearest(name, candidates)
}
