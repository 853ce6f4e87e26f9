package filter

import "regexp"

// Include is one include regex of a filter, by its place in the list.
type Include struct {
	Index   int
	Pattern string
}

// IncludeWatch tells which include regexes of a filter match none of the
// names a scrape saw, so that a typo in one is told once rather than
// silently selecting nothing. A regex is told again only after it has
// matched in between.
type IncludeWatch struct {
	include []*regexp.Regexp
	told    []bool // matched nothing when last seen, and was told
}

// WatchIncludes returns a watch of f's include regexes.
func (f *Filter) WatchIncludes() *IncludeWatch {
	return &IncludeWatch{include: f.include, told: make([]bool, len(f.include))}
}

// Observe takes every name a scrape saw (before exclusions: a regex whose
// names are all excluded is no typo) and returns the regexes that now match
// none of them and had not been told, and those told before that match
// again.
func (w *IncludeWatch) Observe(names []string) (unmatched, matchedAgain []Include) {
	for i, re := range w.include {
		matched := false
		for _, name := range names {
			if re.MatchString(name) {
				matched = true
				break
			}
		}
		switch {
		case !matched && !w.told[i]:
			unmatched = append(unmatched, Include{Index: i, Pattern: re.String()})
		case matched && w.told[i]:
			matchedAgain = append(matchedAgain, Include{Index: i, Pattern: re.String()})
		}
		w.told[i] = !matched
	}
	return unmatched, matchedAgain
}
