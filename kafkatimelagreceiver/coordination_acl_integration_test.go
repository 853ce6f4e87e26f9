package kafkatimelagreceiver

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"go.uber.org/zap"

	"github.com/otelcol-kafkatimelag/otelcol-kafkatimelag/kafkatimelagreceiver/internal/kafka"
)

// coordinationACLs are the ACLs SECURITY.md lists for coordination: Read on
// the coordination group (join, heartbeat, leave), Read on the
// coordination topic and, to let the receiver create it, Create on it.
func coordinationACLs(group, topic string, create bool) []kfake.ACL {
	acls := []kfake.ACL{
		{Resource: kmsg.ACLResourceTypeGroup, Name: group, Pattern: kmsg.ACLResourcePatternTypeLiteral, Operation: kmsg.ACLOperationRead, Allow: true},
		{Resource: kmsg.ACLResourceTypeTopic, Name: topic, Pattern: kmsg.ACLResourcePatternTypeLiteral, Operation: kmsg.ACLOperationRead, Allow: true},
	}
	if create {
		acls = append(acls, kfake.ACL{Resource: kmsg.ACLResourceTypeTopic, Name: topic, Pattern: kmsg.ACLResourcePatternTypeLiteral, Operation: kmsg.ACLOperationCreate, Allow: true})
	}
	return acls
}

func coordinationACLKafka(t *testing.T, password string, acls []kfake.ACL) *testKafka {
	t.Helper()
	return newSecureTestKafka(t, 3,
		[]kgo.Opt{kgo.SASL(saslMechanismFor(t, kafka.SASLSCRAMSHA256, secAdminUser, secAdminPassword))},
		kfake.EnableSASL(),
		kfake.EnableACLs(),
		kfake.GroupMinSessionTimeout(100*time.Millisecond),
		kfake.Superuser(kafka.SASLSCRAMSHA256, secAdminUser, secAdminPassword),
		kfake.User(kafka.SASLSCRAMSHA256, secMonitorUser, password, acls...),
	)
}

func coordinatedACLConfig(k *testKafka, password string) *Config {
	cfg := aclScraperConfig(k, password)
	cfg.Coordination.GroupID = "lag-replicas"
	cfg.Coordination.Topic = "lag-coordination"
	cfg.Coordination.TopicPartitions = 4
	cfg.Coordination.SessionTimeout = time.Second
	cfg.Coordination.HeartbeatInterval = 100 * time.Millisecond
	return cfg
}

// TestCoordinationLeastPrivilege: with the monitoring ACLs plus the
// coordination ones of SECURITY.md, a replica creates the coordination
// topic, joins and reports; without Create, and with no topic, it reports
// nothing and its scrapes say what is missing.
func TestCoordinationLeastPrivilege(t *testing.T) {
	const password = "coordinate-Pa55-7"
	t.Run("with create", func(t *testing.T) {
		acls := append(aclsFor("team-", []string{"orders"}, []string{"orders"}), coordinationACLs("lag-replicas", "lag-coordination", true)...)
		k := coordinationACLKafka(t, password, acls)
		k.CreateTopic("orders", 1)
		at := time.Now().Add(-time.Hour).Truncate(time.Millisecond)
		k.Produce("orders", 0, at, at.Add(time.Minute))
		k.Commit("team-a", "orders", map[int32]int64{0: 0})

		s, logs := startObservedScraper(t, coordinatedACLConfig(k, password), zap.NewAtomicLevelAt(zap.InfoLevel))
		require.Eventually(t, func() bool {
			md, err := s.scrape(context.Background())
			require.NoError(t, err)
			return intValues(pointsOf(md, "kafka.consumer_group.lag"))[pointKey{"team-a", "orders", 0}] == 2
		}, 30*time.Second, 100*time.Millisecond, "the replica joins and reports team-a")
		require.Equal(t, 1, logs.FilterMessageSnippet("created the coordination topic").Len())
		require.Empty(t, deniedWarnings(logs))
		requireNoSecretLogged(t, logs, password)
	})
	t.Run("without create", func(t *testing.T) {
		acls := append(aclsFor("team-", []string{"orders"}, []string{"orders"}), coordinationACLs("lag-replicas", "lag-coordination", false)...)
		k := coordinationACLKafka(t, password, acls)
		s, logs := startObservedScraper(t, coordinatedACLConfig(k, password), zap.NewAtomicLevelAt(zap.InfoLevel))
		var err error
		require.Eventually(t, func() bool {
			_, err = s.scrape(context.Background())
			return err != nil
		}, 30*time.Second, 100*time.Millisecond)
		require.ErrorContains(t, err, `coordination: not a member of group "lag-replicas", so reporting no group`)
		require.ErrorContains(t, err, `create coordination topic "lag-coordination" (needs CREATE on the topic or the cluster, or create it yourself with 4 partitions)`)
		require.Equal(t, 1, logs.FilterMessageSnippet("cannot join the replicas' group").Len(), "one warning for the failure streak")
	})
}
