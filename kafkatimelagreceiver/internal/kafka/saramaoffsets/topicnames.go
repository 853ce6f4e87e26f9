package saramaoffsets

import (
	"context"
	"fmt"

	"github.com/IBM/sarama"

	"github.com/otelcol-kafkatimelag/otelcol-kafkatimelag/kafkatimelagreceiver/internal/kafka"
	"github.com/otelcol-kafkatimelag/otelcol-kafkatimelag/kafkatimelagreceiver/internal/kafka/brokerwatch"
)

// nameAssignedTopics gives the topics of KIP-848 assignments their names
// where the broker named them by id only (ConsumerGroupDescribe carries
// both; some brokers leave the name empty), so that an assignment joins
// the lag series by topic. Topics the client's metadata does not know are
// looked up with one Metadata request for every topic; on brokers that
// name their topics none is sent.
func (c *Offsets) nameAssignedTopics(ctx context.Context, call *brokerwatch.Call, client sarama.Client, described map[string]kafka.GroupDescription) error {
	names, err := client.Topics()
	if err != nil {
		return nil // no metadata to compare with: the ids stay
	}
	known := make(map[string]bool, len(names))
	for _, t := range names {
		known[t] = true
	}
	unnamed := false
	for _, d := range described {
		if d.Protocol != kafka.NextGenProtocol {
			continue
		}
		for _, m := range d.Members {
			for _, tp := range m.Assignment {
				unnamed = unnamed || !known[tp.Topic]
			}
		}
	}
	if !unnamed {
		return nil
	}
	resp, err := c.conn.Metadata(ctx, call, client, nil)
	if err != nil {
		return fmt.Errorf("name the topics of KIP-848 assignments: %w", err)
	}
	byID := make(map[string]string, len(resp.Topics))
	for _, t := range resp.Topics {
		if t.Uuid != (sarama.Uuid{}) {
			byID[t.Uuid.String()] = t.Name
		}
	}
	for _, d := range described {
		if d.Protocol != kafka.NextGenProtocol {
			continue
		}
		for _, m := range d.Members {
			for i, tp := range m.Assignment {
				if name, ok := byID[tp.Topic]; ok && !known[tp.Topic] {
					m.Assignment[i].Topic = name
				}
			}
			kafka.SortPartitions(m.Assignment)
		}
	}
	return nil
}
