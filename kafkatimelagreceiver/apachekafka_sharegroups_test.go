//go:build kafka

package kafkatimelagreceiver

import (
	"context"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/otelcol-kafkatimelag/otelcol-kafkatimelag/kafkatimelagreceiver/kafkatest/apachekafka"
)

// describeShareGroup is kafka-share-groups --describe of a group: the
// START-OFFSET and LAG columns by (topic, partition), read by the header's
// names; -1 for a partition the group has no state on ("-").
func (k *realKafka) describeShareGroup(group string) map[pointKey][2]int64 {
	k.t.Helper()
	out := k.tool(apachekafka.ShareGroups, "--describe", "--group", group)
	rows := map[pointKey][2]int64{}
	var columns map[string]int
	for _, line := range strings.Split(out, "\n") {
		f := strings.Fields(line)
		if len(f) > 0 && f[0] == "GROUP" {
			columns = map[string]int{}
			for i, name := range f {
				columns[name] = i
			}
			continue
		}
		if columns == nil || len(f) != len(columns) || f[0] != group {
			continue
		}
		partition, err := strconv.ParseInt(f[columns["PARTITION"]], 10, 64)
		require.NoError(k.t, err, line)
		key := pointKey{group, f[columns["TOPIC"]], partition}
		if f[columns["START-OFFSET"]] == "-" {
			rows[key] = [2]int64{-1, -1} // no state on the partition yet
			continue
		}
		start, err := strconv.ParseInt(f[columns["START-OFFSET"]], 10, 64)
		require.NoError(k.t, err, line)
		lag, err := strconv.ParseInt(f[columns["LAG"]], 10, 64)
		require.NoError(k.t, err, line)
		rows[key] = [2]int64{start, lag}
	}
	require.NotEmpty(k.t, rows, "kafka-share-groups --describe --group %s:\n%s", group, out)
	return rows
}

// TestApacheKafkaShareGroup: Kafka's console share consumer reads part of a
// LogAppendTime topic of two partitions (a partition it has not fetched
// from has no state yet: no lag either) in a share group set to start from
// the earliest records (kafka-configs on the group), accepting what it
// reads, and leaves. The receiver's share-group lag and start offset equal
// kafka-share-groups --describe on both partitions, and its time lag is
// within the target of the append of the record at the start offset.
func TestApacheKafkaShareGroup(t *testing.T) {
	requireNoLeakedGoroutines(t)
	k := newRealKafka(t, apachekafka.Options{})
	const topic, group = "jobs", "workers"
	k.createTopic(topic, 2, map[string]string{"message.timestamp.type": "LogAppendTime"})
	k.fill(topic, 2, 100)
	k.tool(apachekafka.Configs, "--alter", "--entity-type", "groups", "--entity-name", group, "--add-config", "share.auto.offset.reset=earliest")
	_, err := k.Tool(context.Background(), apachekafka.ConsoleShareConsumer, "--bootstrap-server", k.Addrs()[0],
		"--topic", topic, "--group", group, "--max-messages", "70", "--formatter-property", "print.value=false")
	require.NoError(t, err)

	described := k.describeShareGroup(group)
	require.Len(t, described, 2, "both partitions described")
	cfg := k.config()
	cfg.Metrics.KafkaShareGroupStartOffset.Enabled = true
	s := startScraper(t, cfg)
	md, err := s.scrape(context.Background())
	require.NoError(t, err)
	lags, starts, timeLags := pointsOf(md, "kafka.share_group.lag"), pointsOf(md, "kafka.share_group.start_offset"), pointsOf(md, "kafka.share_group.time_lag")
	unfinished := int64(0)
	for key, row := range described {
		if row[0] < 0 {
			require.NotContains(t, lags, key, "%s: no state, no lag", describeKey(key))
			continue
		}
		require.Equal(t, row[0], starts[key].intValue, "%s: start offset, kafka-share-groups --describe says %d", describeKey(key), row[0])
		require.Equal(t, row[1], lags[key].intValue, "%s: lag, kafka-share-groups --describe says %d", describeKey(key), row[1])
		tl, ok := timeLags[key]
		require.True(t, ok, "%s: no time lag", describeKey(key))
		if row[0] >= 100 {
			require.Zero(t, tl.doubleValue, "%s: finished", describeKey(key))
			continue
		}
		unfinished += row[1]
		requireTimeLag(t, tl, k.recordAt(topic, int32(key.partition), row[0]).Timestamp, describeKey(key))
	}
	require.Positive(t, unfinished, "the consumer left records unfinished")
}
