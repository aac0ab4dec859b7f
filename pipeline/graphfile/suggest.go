package graphfile

import "github.com/junction-dataplane/junction/conf"

// suggest returns the candidate nearest to name, or "" when none is near
// enough to be a plausible typo (see conf.Nearest).
func suggest(name string, candidates []string) string {
	return conf.Nearest(name, candidates)
}
