// Package filter selects names (groups, topics) by regular expressions.
package filter

import (
	"fmt"
	"regexp"
)

// Filter keeps a name when it matches an include regex (or there are none)
// and no exclude regex. Regexes are unanchored, as in Go's regexp.
type Filter struct {
	include []*regexp.Regexp
	exclude []*regexp.Regexp
	skip    string // a name never kept, whatever the regexes say; "" none
}

// New compiles the regexes; an error names the invalid one by its key
// (include::1).
func New(include, exclude []string) (*Filter, error) {
	f := &Filter{}
	var err error
	if f.include, err = compile("include", include); err != nil {
		return nil, err
	}
	if f.exclude, err = compile("exclude", exclude); err != nil {
		return nil, err
	}
	return f, nil
}

func compile(key string, exprs []string) ([]*regexp.Regexp, error) {
	out := make([]*regexp.Regexp, 0, len(exprs))
	for i, expr := range exprs {
		re, err := regexp.Compile(expr)
		if err != nil {
			return nil, fmt.Errorf("%s::%d: invalid regex %q: %w", key, i, expr, err)
		}
		out = append(out, re)
	}
	return out, nil
}

// Skipping returns a filter like f that never keeps name.
func (f *Filter) Skipping(name string) *Filter {
	g := *f
	g.skip = name
	return &g
}

// Matches tells whether name is kept.
func (f *Filter) Matches(name string) bool {
	if f.skip != "" && name == f.skip {
		return false
	}
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
