package kafka

import (
	"context"
	"encoding/hex"
)

// TopicID is the id Kafka gives a topic when it is created (Kafka 2.8 and
// later): a topic deleted and created again under the same name gets a new
// one. The zero TopicID means the id is not known.
type TopicID [16]byte

// IsZero tells whether the id is unknown.
func (id TopicID) IsZero() bool { return id == TopicID{} }

func (id TopicID) String() string { return hex.EncodeToString(id[:]) }

// Identity is what a cluster says about which cluster it is and which
// incarnation of each topic it holds.
type Identity struct {
	// ClusterID is the cluster's id; empty when the broker does not give
	// one (before Kafka 0.10.1).
	ClusterID string
	// Topics holds the id of each topic asked about that the cluster knows
	// and gives an id for.
	Topics map[string]TopicID
}

// Identifier reads a cluster's identity.
type Identifier interface {
	// Identify reads the cluster's id and the ids of the topics in one
	// request. It returns nil when no broker answered; topics the broker
	// could not describe are absent and named in the error.
	Identify(ctx context.Context, topics []string) (*Identity, error)
}
