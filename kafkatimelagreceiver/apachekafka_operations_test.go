//go:build kafka

package kafkatimelagreceiver

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kadm"

	"github.com/otelcol-kafkatimelag/otelcol-kafkatimelag/kafkatimelagreceiver/kafkatest/apachekafka"
)

// TestApacheKafkaOperationsOnThreeBrokers: a controller and three brokers,
// a LogAppendTime topic of 6 partitions replicated 3 times, a group 20
// records behind on each, nothing written while the brokers are operated
// on: a broker killed (SIGKILL) and started again, a broker paused
// (SIGSTOP) and resumed, and the partitions reassigned away from their
// leaders (kafka-reassign-partitions). Every scrape returns; each lag it
// reports is the right one and each time lag within the target of the
// append of the record at the committed offset, or absent; after each
// operation the scrapes are whole again (every partition, with its time
// lag), as the in-process tests of the same faults assert.
func TestApacheKafkaOperationsOnThreeBrokers(t *testing.T) {
	requireNoLeakedGoroutines(t)
	k := newRealKafka(t, apachekafka.Options{Brokers: 3})
	const topic, partitions, behind = "orders", 6, 20
	k.createTopic(topic, partitions, map[string]string{"message.timestamp.type": "LogAppendTime", "min.insync.replicas": "1"})
	k.fill(topic, partitions, 2*behind)
	offsets := kadm.Offsets{}
	appended := map[int64]time.Time{}
	for p := range int32(partitions) {
		offsets.Add(kadm.Offset{Topic: topic, Partition: p, At: behind, LeaderEpoch: -1})
		appended[int64(p)] = k.recordAt(topic, p, behind).Timestamp
	}
	resp, err := k.admin.CommitOffsets(context.Background(), "ops", offsets)
	require.NoError(t, err)
	require.NoError(t, resp.Error())

	cfg := k.config()
	cfg.Timeout = 2 * time.Second
	s := startScraper(t, cfg)
	// scrape checks what one scrape reports and says whether it was whole.
	scrape := func(what string) bool {
		t.Helper()
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		md, _ := s.scrape(ctx) // a partial scrape's error is expected while a broker is down
		require.NoError(t, ctx.Err(), "%s: the scrape returns", what)
		lags, timeLags := pointsOf(md, "kafka.consumer_group.lag"), pointsOf(md, "kafka.consumer_group.time_lag")
		for key, l := range lags {
			require.Equal(t, int64(behind), l.intValue, "%s: %s", what, describeKey(key))
		}
		for key, tl := range timeLags {
			requireTimeLag(t, tl, appended[key.partition], what+": "+describeKey(key))
		}
		return len(lags) == partitions && len(timeLags) == partitions
	}
	untilWhole := func(what string) {
		t.Helper()
		for i := 0; !scrape(what); i++ {
			require.Less(t, i, 120, "%s: not whole after %d scrapes", what, i)
			time.Sleep(250 * time.Millisecond)
		}
	}
	untilWhole("before")
	for range 3 {
		require.NoError(t, s.sampler.Sample(context.Background(), true))
	}

	victim := k.Nodes[1]
	victim.Kill()
	untilWhole("broker 2 killed")
	require.NoError(t, victim.Start(context.Background()))
	untilWhole("broker 2 restarted")

	paused := k.Nodes[2]
	require.NoError(t, paused.Pause())
	for range 3 {
		scrape("broker 3 paused")
	}
	untilWhole("broker 3 paused")
	require.NoError(t, paused.Resume())
	untilWhole("broker 3 resumed")

	// Each partition's replicas become the two brokers that do not lead it.
	md, err := k.admin.Metadata(context.Background(), topic)
	require.NoError(t, err)
	type move struct {
		Topic     string  `json:"topic"`
		Partition int32   `json:"partition"`
		Replicas  []int32 `json:"replicas"`
	}
	plan := struct {
		Version    int    `json:"version"`
		Partitions []move `json:"partitions"`
	}{Version: 1}
	leaders := map[int32]int32{}
	for p, detail := range md.Topics[topic].Partitions {
		leaders[p] = detail.Leader
		var others []int32
		for _, n := range k.Nodes {
			if int32(n.ID) != detail.Leader {
				others = append(others, int32(n.ID))
			}
		}
		plan.Partitions = append(plan.Partitions, move{Topic: topic, Partition: p, Replicas: others})
	}
	planJSON, err := json.Marshal(plan)
	require.NoError(t, err)
	planFile := filepath.Join(t.TempDir(), "reassignment.json")
	require.NoError(t, os.WriteFile(planFile, planJSON, 0o600))
	k.tool(apachekafka.ReassignPartitions, "--reassignment-json-file", planFile, "--execute")
	for i := 0; ; i++ {
		out := k.tool(apachekafka.ReassignPartitions, "--reassignment-json-file", planFile, "--verify")
		scrape("partitions reassigned")
		t.Logf("verify: %s", out)
		if !strings.Contains(out, "still in progress") {
			break
		}
		require.Less(t, i, 60, "reassignment not done: %s", out)
	}
	untilWhole("partitions reassigned")
	// A client of its own: one kept answers from what it learnt before.
	fresh, err := k.Client()
	require.NoError(t, err)
	defer fresh.Close()
	md, err = kadm.NewClient(fresh).Metadata(context.Background(), topic)
	require.NoError(t, err)
	for p, detail := range md.Topics[topic].Partitions {
		require.Len(t, detail.Replicas, 2, "partition %d reassigned", p)
		require.NotEqual(t, leaders[p], detail.Leader, "partition %d has a new leader", p)
	}
}
