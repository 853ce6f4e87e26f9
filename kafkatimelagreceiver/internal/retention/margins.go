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
// none are passed over, and a topic without a margin is left out; a topic
// with a pair whose margin is unknown has an unknown margin, since the
// smallest of the others could be far later than the truth.
func TopicMargins(out []TopicMargin, lags []lag.PartitionLag, margins []Margin) []TopicMargin {
	for start := 0; start < len(lags); {
		end := start + 1
		for end < len(lags) && lags[end].Group == lags[start].Group && lags[end].Topic == lags[start].Topic {
			end++
		}
		if m := smallest(margins[start:end]); m.Outcome != None {
			out = append(out, TopicMargin{Group: lags[start].Group, Topic: lags[start].Topic, Margin: m})
		}
		start = end
	}
	return out
}

// smallest is the smallest of margins: unknown when one is.
func smallest(margins []Margin) Margin {
	var out Margin
	for _, m := range margins {
		switch m.Outcome {
		case Unknown:
			return Margin{Outcome: Unknown}
		case Known:
			out.soonest(m.Seconds, m.Basis)
		}
	}
	return out
}
