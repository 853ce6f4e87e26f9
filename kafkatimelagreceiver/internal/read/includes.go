package read

import (
	"fmt"

	"go.uber.org/zap"

	"github.com/otelcol-kafkatimelag/otelcol-kafkatimelag/kafkatimelagreceiver/internal/filter"
)

// watchIncludes logs, once, an include regex under key (groups, topics)
// that matches none of the names a complete read saw, so that a typo does
// not go unnoticed as a scrape with nothing in it; and says when it
// matches again. w nil: not watched.
func (r *Reader) watchIncludes(w *filter.IncludeWatch, key, what string, names []string) {
	if w == nil {
		return
	}
	unmatched, matchedAgain := w.Observe(names)
	for _, inc := range unmatched {
		r.Logger.Warn(fmt.Sprintf("%s::include::%d matches no %s: nothing it would select is reported (a typo?)", key, inc.Index, what),
			zap.String("pattern", inc.Pattern), zap.Int("names_seen", len(names)))
	}
	for _, inc := range matchedAgain {
		r.Logger.Info(fmt.Sprintf("%s::include::%d matches a %s again", key, inc.Index, what), zap.String("pattern", inc.Pattern))
	}
}
