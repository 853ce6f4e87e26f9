package lag

import (
	"github.com/otelcol-kafkatimelag/otelcol-kafkatimelag/kafkatimelagreceiver/internal/kafka"
	"github.com/otelcol-kafkatimelag/otelcol-kafkatimelag/kafkatimelagreceiver/internal/recordcache"
)

// appendStamped is a record cache for which the fixtures' topics'
// configuration says their stamps are append times (LogAppendTime): the
// tests that use it check how stamps date records, not whether they may
// (stamps_test.go).
func appendStamped() *recordcache.Cache {
	r := recordcache.New()
	topics := map[string]kafka.TopicRetention{}
	for _, t := range []string{"orders", "audit", "bursts", "busy", "jobs", "t", "untracked"} {
		topics[t] = kafka.TopicRetention{LogAppendTime: true}
	}
	r.SetTopics(topics)
	return r
}

// GroupLags is Estimates.GroupLags before any estimate: the lags, and
// only the caught-up ones dated.
func (idx *Index) GroupLags(out []PartitionLag, group string, at int64) []PartitionLag {
	e := Estimates{idx: idx}
	return e.GroupLags(out, group, at)
}

// ShareGroupLags is Estimates.ShareGroupLags before any estimate.
func (idx *Index) ShareGroupLags(out []SharePartitionLag, group string, at int64) []SharePartitionLag {
	e := Estimates{idx: idx}
	return e.ShareGroupLags(out, group, at)
}
