package kafkatimelagreceiver

import (
	"fmt"
	"regexp"
)

// nameFilter keeps a name when it matches an include regex (or there are none)
// and no exclude regex.
type nameFilter struct {
	include []*regexp.Regexp
	exclude []*regexp.Regexp
}

func newNameFilter(key string, f FilterConfig) (*nameFilter, error) {
	nf := &nameFilter{}
	for i, expr := range f.Include {
		re, err := regexp.Compile(expr)
		if err != nil {
			return nil, fmt.Errorf("%s.include[%d]: invalid regex %q: %w", key, i, expr, err)
		}
		nf.include = append(nf.include, re)
	}
	for i, expr := range f.Exclude {
		re, err := regexp.Compile(expr)
		if err != nil {
			return nil, fmt.Errorf("%s.exclude[%d]: invalid regex %q: %w", key, i, expr, err)
		}
		nf.exclude = append(nf.exclude, re)
	}
	return nf, nil
}

func (f *nameFilter) matches(name string) bool {
	for _, re := range f.exclude {
		if re.MatchString(name) {
			return false
		}
	}
	if len(f.include) == 0 {
		return true
	}
	for _, re := range f.include {
		if re.MatchString(name) {
			return true
		}
	}
	return false
}
