package saramacluster

import (
	"context"
	"slices"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/otelcol-kafkatimelag/otelcol-kafkatimelag/kafkatimelagreceiver/internal/kafka"
	"github.com/otelcol-kafkatimelag/otelcol-kafkatimelag/kafkatimelagreceiver/internal/kafka/clientsettings"
)

// sarama's metrics start one process-wide meter goroutine that never ends.
var ignoreMeterArbiter = goleak.IgnoreTopFunction("github.com/rcrowley/go-metrics.(*meterArbiter).tick")

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m, ignoreMeterArbiter)
}

// recordTimestamps is Cluster.RecordTimestamps of records named one by one,
// its answers by record.
func recordTimestamps(ctx context.Context, c *Cluster, records []recordAt) (map[recordAt]kafka.RecordTimestamp, error) {
	var wanted []kafka.PartitionOffsets
	for _, r := range records {
		i := slices.IndexFunc(wanted, func(w kafka.PartitionOffsets) bool { return w.TopicPartition == r.TopicPartition })
		if i < 0 {
			wanted = append(wanted, kafka.PartitionOffsets{TopicPartition: r.TopicPartition})
			i = len(wanted) - 1
		}
		wanted[i].Offsets = append(wanted[i].Offsets, r.Offset)
	}
	for i := range wanted {
		slices.Sort(wanted[i].Offsets)
		wanted[i].Offsets = slices.Compact(wanted[i].Offsets)
	}
	reads, err := c.RecordTimestamps(ctx, wanted)
	out := map[recordAt]kafka.RecordTimestamp{}
	for tp, found := range reads {
		for _, r := range found {
			out[recordAt{TopicPartition: tp, Offset: r.Wanted}] = r.RecordTimestamp
		}
	}
	return out, err
}

// recordAt names the record at an offset of a partition.
type recordAt struct {
	kafka.TopicPartition
	Offset int64
}

const securityTestPassword = "s3cr3t-Pa55"

// defaultSettings are the receiver's defaults.
func defaultSettings() clientsettings.Settings {
	return clientsettings.Settings{
		Brokers:         []string{"localhost:9092"},
		ClientID:        "otel-kafkatimelag",
		ProtocolVersion: "3.0.0",
		RequestTimeout:  10 * time.Second,
		DialTimeout:     10 * time.Second,
		Metadata:        clientsettings.Metadata{RefreshInterval: 10 * time.Minute},
	}
}

// testSettings are the receiver's defaults pointed at brokers (a test's
// kfake cluster): its client id and protocol version, and a 10 s request
// timeout.
func testSettings(brokers []string) clientsettings.Settings {
	s := defaultSettings()
	s.Brokers = brokers
	return s
}
