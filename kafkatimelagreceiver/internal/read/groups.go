package read

import (
	"cmp"
	"slices"
	"strings"

	"go.uber.org/zap"

	"github.com/otelcol-kafkatimelag/otelcol-kafkatimelag/kafkatimelagreceiver/internal/kafka"
)

// ownedOnly keeps, of the partitions whose commit was not read by group,
// those of the groups in committed: the groups this replica computes.
func ownedOnly(partlyRead map[string][]kafka.TopicPartition, committed map[string]kafka.Commits) map[string][]kafka.TopicPartition {
	for g := range partlyRead {
		if _, ok := committed[g]; !ok {
			delete(partlyRead, g)
		}
	}
	return partlyRead
}

// unreadGroups returns the groups whose committed offsets were not read (a
// group read with no commit at all is in committed, empty) and says so in
// the debug log: their lags and status are left out of this scrape.
func (r *Reader) unreadGroups(groups []string, committed map[string]kafka.Commits) map[string]bool {
	var names []string
	for _, g := range groups {
		if _, ok := committed[g]; !ok {
			names = append(names, g)
		}
	}
	if len(names) == 0 {
		return nil
	}
	r.Logger.Debug("committed offsets of consumer groups could not be read: their lags and status omitted from this scrape",
		zap.Int("groups_unread", len(names)), zap.Strings("groups", kafka.TruncateNames(names)))
	unread := make(map[string]bool, len(names))
	for _, g := range names {
		unread[g] = true
	}
	return unread
}

// dropExcludedTopics drops the commits on topics the filter excludes, and
// the groups left without commits. It returns every topic committed on,
// each with whether it was kept.
func (r *Reader) dropExcludedTopics(committed map[string]kafka.Commits) map[string]bool {
	topicOK := map[string]bool{} // the topic filter, once per topic
	for group, commits := range committed {
		kept := commits[:0]
		// Commits are sorted by topic: the filter's answer is looked up
		// once per run of a topic.
		var topic string
		var ok bool
		for i, c := range commits {
			if i == 0 || c.Topic != topic {
				topic = c.Topic
				var seen bool
				if ok, seen = topicOK[topic]; !seen {
					ok = r.Topics.Matches(topic)
					topicOK[topic] = ok
				}
			}
			if ok {
				kept = append(kept, c)
			}
		}
		if len(kept) == 0 {
			delete(committed, group)
			continue
		}
		committed[group] = kept
	}
	return topicOK
}

// groupReads lists the groups reported or with commits (committed: how
// many partitions each committed on), sorted by name, and counts the pairs
// with a commit.
func groupReads(reported []string, committed map[string]int, unread map[string]bool, described map[string]kafka.GroupDescription, foreign map[string]bool) ([]Group, int) {
	out := make([]Group, 0, len(reported)+len(committed))
	for _, g := range reported {
		d, ok := described[g]
		out = append(out, Group{Name: g, Reported: true, Unread: unread[g], Described: ok, Description: d})
	}
	pairs := 0
	for g, n := range committed {
		pairs += n
		out = append(out, Group{Name: g, Foreign: foreign[g]})
	}
	// A reported group with commits is listed twice: the reported one
	// sorts first and stays.
	slices.SortStableFunc(out, func(a, b Group) int {
		return cmp.Or(strings.Compare(a.Name, b.Name), -cmp.Compare(boolInt(a.Reported), boolInt(b.Reported)))
	})
	out = slices.CompactFunc(out, func(a, b Group) bool { return a.Name == b.Name })
	return out, pairs
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}
