package retention

import "github.com/otelcol-kafkatimelag/otelcol-kafkatimelag/kafkatimelagreceiver/internal/lag"

// TopicMargin is the smallest margin of a group on one topic.
type TopicMargin struct {
	Group, Topic string
	Margin
}

// TopicMargins appends to out the smallest margin of each (group, topic)
// of lags, which must be sorted by group, then topic, as lag.GroupLags
// returns them; margins are the pairs', in the order of lags. Pairs with
// none are passed over; a topic with a pair whose margin is unknown gets
// none, since the smallest of the others could be far later than the
// truth.
func TopicMargins(out []TopicMargin, lags []lag.PartitionLag, margins []Margin) []TopicMargin {
	for start := 0; start < len(lags); {
		end := start + 1
		for end < len(lags) && lags[end].Group == lags[start].Group && lags[end].Topic == lags[start].Topic {
			end++
		}
		if m, ok := smallest(margins[start:end]); ok {
			out = append(out, TopicMargin{Group: lags[start].Group, Topic: lags[start].Topic, Margin: m})
		}
		start = end
	}
	return out
}

// smallest is the smallest of margins; none when none is known or one is
// unknown.
func smallest(margins []Margin) (Margin, bool) {
	var out Margin
	for _, m := range margins {
		switch m.Outcome {
		case Unknown:
			return Margin{}, false
		case Known:
			out.soonest(m.Seconds, m.Basis)
		}
	}
	return out, out.Outcome == Known
}
