package conf

import "strings"

// Nearest returns the candidate nearest to name, or "" when none is near
// enough to be a plausible typo. Distance is the optimal-string-alignment
// edit distance on lower-cased strings (so "wrokers" is one edit from
// "workers" and "discard" zero from "Discard"); the allowed distance grows
// with the length of the name, so short names are not "corrected" into
// unrelated ones. Ties go to the earlier candidate; a candidate equal to
// name is skipped.
func Nearest(name string, candidates []string) string {
	if name == "" {
		return ""
	}
	limit := 1
	if n := len(name); n > 3 {
		limit = max(2, n/3)
	}
	best, bestD := "", limit+1
	ln := strings.ToLower(name)
	for _, c := range candidates {
		if c == name || c == "" {
			continue
		}
		d := Distance(ln, strings.ToLower(c), bestD)
		if d < bestD {
			best, bestD = c, d
		}
	}
	return best
}

// Distance is the optimal string alignment distance between a and b
// (insertions, deletions, substitutions and adjacent transpositions, by
// rune). It stops early and returns bound when the distance is at least
// bound.
func Distance(a, b string, bound int) int {
	ra, rb := []rune(a), []rune(b)
	if d := len(ra) - len(rb); d >= bound || -d >= bound {
		return bound
	}
	// Three rows: the one before the previous is needed for transpositions.
	prev2 := make([]int, len(rb)+1)
	prev := make([]int, len(rb)+1)
	cur := make([]int, len(rb)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(ra); i++ {
		cur[0] = i
		rowMin := cur[0]
		for j := 1; j <= len(rb); j++ {
			cost := 1
			if ra[i-1] == rb[j-1] {
				cost = 0
			}
			v := min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
			if i > 1 && j > 1 && ra[i-1] == rb[j-2] && ra[i-2] == rb[j-1] {
				v = min(v, prev2[j-2]+1)
			}
			cur[j] = v
			rowMin = min(rowMin, v)
		}
		if rowMin >= bound {
			return bound
		}
		prev2, prev, cur = prev, cur, prev2
	}
	return min(prev[len(rb)], bound)
}
