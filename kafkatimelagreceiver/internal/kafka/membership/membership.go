// Package membership is the receiver's replicas sharing the monitored
// partitions through a Kafka consumer group (kafka.Membership), with
// sarama's consumer group and the cooperative protocol: the leader deals
// the coordination partitions out by the load hashed onto them
// (balancedPlan), or by their count (sarama's cooperative-sticky assignor)
// while it knows no load.
package membership

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/IBM/sarama"
	"go.uber.org/zap"

	"github.com/otelcol-kafkatimelag/otelcol-kafkatimelag/kafkatimelagreceiver/internal/kafka"
	"github.com/otelcol-kafkatimelag/otelcol-kafkatimelag/kafkatimelagreceiver/internal/kafka/clientsettings"
	"github.com/otelcol-kafkatimelag/otelcol-kafkatimelag/kafkatimelagreceiver/internal/kafka/saramaconfig"
	"github.com/otelcol-kafkatimelag/otelcol-kafkatimelag/kafkatimelagreceiver/internal/kafka/saslauth"
)

var _ kafka.Membership = (*Member)(nil)

var errClosed = errors.New("coordination group membership is closed")

// Settings configure the consumer group the replicas share.
type Settings struct {
	// GroupID is the coordination consumer group's id.
	GroupID string
	// Topic is the coordination topic, whose partitions are dealt out.
	Topic string
	// Partitions and ReplicationFactor are used when the topic is created;
	// a replication factor of -1 is the brokers' default.
	Partitions        int32
	ReplicationFactor int16
	// CreateTopic allows creating the topic when it does not exist.
	CreateTopic bool
	// SessionTimeout is how long the coordinator waits without a heartbeat
	// before it hands a member's partitions to the others.
	SessionTimeout time.Duration
	// HeartbeatInterval is how often a member tells the coordinator it is
	// alive, and so how soon it learns of a rebalance.
	HeartbeatInterval time.Duration
	// PartitionOf is the coordination partition a monitored topic hashes
	// to; with it, a leader deals the partitions out by the loads Weigh
	// gave (nil: by their count alone).
	PartitionOf func(topic string, count int32) int32
	// LoadsWait is how long a new member waits for its first Weigh before
	// it joins, so that a group formed by replicas starting together is
	// dealt out by load from its first plan (a plan is only made again
	// when membership changes). Zero: join at once.
	LoadsWait time.Duration
}

// Retry waits after a failed join: the first is short (a peer may have been
// creating the topic), later ones grow up to maxJoinRetry so that a broker
// that refuses the group is not hammered.
const (
	minJoinRetry = 500 * time.Millisecond
	maxJoinRetry = 30 * time.Second
)

// Member is a kafka.Membership through a sarama consumer group with the
// cooperative-sticky assignor: a rebalance moves only the partitions that
// must move, and the others stay held throughout, so a replica joining or
// leaving does not interrupt the rest.
type Member struct {
	settings Settings
	brokers  []string
	config   *sarama.Config
	counts   *countedAssignments // the leader's partition count, by generation
	logger   *zap.Logger
	// topicLoads are the monitored topics' loads Weigh last gave;
	// weighed is closed by the first Weigh.
	topicLoads atomic.Pointer[map[string]int64]
	weighed    chan struct{}
	weighOnce  sync.Once

	cancel context.CancelFunc
	done   chan struct{}

	mu      sync.Mutex
	session sarama.ConsumerGroupSession // nil when not joined
	count   int32                       // the coordination topic's partitions, as this member read them
	lastErr error
	closing bool
	client  sarama.Client
	group   sarama.ConsumerGroup
	// away is why the replica stood down (Leave), nil while it takes part;
	// rejoin wakes the loop once it may take part again (Rejoin), and
	// endSession ends the consume in flight.
	away       error
	rejoin     chan struct{}
	endSession context.CancelFunc
}

// New checks the settings and starts joining in the background.
// Close must be called to leave and stop.
func New(s clientsettings.Settings, m Settings) (*Member, error) {
	ms := &Member{settings: m, weighed: make(chan struct{})}
	ms.counts = newCountedAssignments(sarama.NewBalanceStrategyCooperativeSticky(), m.Topic, ms.partitionLoads)
	sc, err := clientConfig(s, m, ms.counts)
	if err != nil {
		return nil, err
	}
	logger := s.Logger
	if logger == nil {
		logger = zap.NewNop()
	}
	ctx, cancel := context.WithCancel(context.Background())
	ms.brokers, ms.config, ms.logger = slices.Clone(s.Brokers), sc, logger
	ms.cancel, ms.done, ms.rejoin = cancel, make(chan struct{}), make(chan struct{}, 1)
	go ms.run(ctx)
	return ms, nil
}

// membershipLookupRetries is the fewest metadata and coordinator lookup
// retries the membership's client makes: sarama's default.
const membershipLookupRetries = 3

// clientConfig is the Kafka client configuration with the group's
// settings and strategy. A member holds no offsets and reads nothing: the
// topic stays empty, only its partitions are dealt out.
func clientConfig(s clientsettings.Settings, m Settings, strategy sarama.BalanceStrategy) (*sarama.Config, error) {
	sc, err := saramaconfig.ClientConfig(s)
	if err != nil {
		return nil, err
	}
	if err := CheckVersion(s.ProtocolVersion); err != nil {
		return nil, err
	}
	g := &sc.Consumer.Group
	g.Session.Timeout = m.SessionTimeout
	g.Heartbeat.Interval = m.HeartbeatInterval
	g.Rebalance.GroupStrategies = []sarama.BalanceStrategy{strategy}
	// How long the coordinator waits for members to rejoin once a
	// rebalance starts. A live member rejoins within a heartbeat interval
	// (at most a third of the session timeout); Kafka drops a dead one when
	// its session expires, but some coordinators (kfake) wait this long
	// after that, so it adds to the failover time there.
	g.Rebalance.Timeout = m.SessionTimeout / 2
	g.Rebalance.Retry.Backoff = m.HeartbeatInterval
	// metadata::retry::max is kept low so that lookups cannot hold a scrape;
	// the membership runs in its own goroutine, where a coordinator lookup
	// during a rebalance (a dead member's session expiring) must survive a
	// retry or two, or every replica drops out for a round.
	sc.Metadata.Retry.Max = max(sc.Metadata.Retry.Max, membershipLookupRetries)
	sc.Consumer.Offsets.AutoCommit.Enable = false
	sc.Consumer.Offsets.Initial = sarama.OffsetNewest
	// The coordinator holds a JoinGroup until every member has rejoined,
	// for up to the rebalance timeout: a shorter read deadline would cut
	// every slow rebalance short.
	sc.Net.ReadTimeout += g.Rebalance.Timeout
	sc.Admin.Timeout = sc.Net.WriteTimeout
	if err := sc.Validate(); err != nil {
		return nil, fmt.Errorf("coordination client configuration: %w", err)
	}
	return sc, nil
}

// CheckVersion tells whether a protocol version speaks what the
// membership needs: cooperative rebalancing came with Kafka 2.4.
func CheckVersion(v string) error {
	if err := saramaconfig.CheckVersion(v); err != nil {
		return err
	}
	if !saramaconfig.VersionAtLeast(v, "2.4.0") {
		return fmt.Errorf("coordination needs protocol_version 2.4.0 or later (cooperative rebalancing), got %s", v)
	}
	return nil
}

// Assignment returns what the replica holds now, without network I/O. The
// partition count is the one the group's leader assigned the generation
// from, which every member of the generation received with its assignment:
// the members' own metadata may disagree (the topic grew or was recreated
// between their joins). An assignment from a leader that sent no count (an
// older release) falls back to the count this member read when it joined.
func (m *Member) Assignment() kafka.Assignment {
	m.mu.Lock()
	sess, count, lastErr, away := m.session, m.count, m.lastErr, m.away
	m.mu.Unlock()
	if away != nil {
		return kafka.Assignment{Err: away}
	}
	if sess == nil || sess.Context().Err() != nil {
		return kafka.Assignment{Err: lastErr}
	}
	generation := sess.GenerationID()
	if leaders, ok := m.counts.countFor(generation); ok {
		count = leaders
	}
	held := slices.Clone(sess.Claims()[m.settings.Topic])
	slices.Sort(held)
	return kafka.Assignment{
		Joined:         true,
		Partitions:     held,
		PartitionCount: count,
		MemberID:       sess.MemberID(),
		Generation:     generation,
	}
}

// Close leaves the group, so that the others take over at once, and waits
// for the goroutine. A join in flight holds it for up to the client's read
// deadline.
func (m *Member) Close() error {
	m.mu.Lock()
	m.closing = true
	group := m.group
	m.mu.Unlock()
	m.cancel()
	var errs []error
	if group != nil {
		// Sends LeaveGroup once the consume loop has returned.
		if err := group.Close(); err != nil {
			errs = append(errs, fmt.Errorf("leave coordination group %q: %w", m.settings.GroupID, err))
		}
	}
	<-m.done
	m.mu.Lock()
	client := m.client
	m.client, m.group = nil, nil
	m.mu.Unlock()
	if client != nil {
		if err := client.Close(); err != nil && !errors.Is(err, sarama.ErrClosedClient) {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// run joins and stays joined until Close, retrying with a growing wait
// after failures: one warning per failure streak, and the error kept for
// Assignment.
func (m *Member) run(ctx context.Context) {
	defer close(m.done)
	if !m.awaitLoads(ctx) {
		return
	}
	wait := minJoinRetry
	for {
		if m.stayAway(ctx) != nil {
			return
		}
		err := m.consume(ctx)
		if ctx.Err() != nil {
			return
		}
		m.mu.Lock()
		if m.away != nil {
			m.mu.Unlock()
			continue // the session was ended by Leave, not by a failure
		}
		// A join clears lastErr, so each failure after a join warns again.
		wasFailing := m.lastErr != nil
		m.lastErr = err
		m.mu.Unlock()
		switch {
		case err == nil:
			// The session ended (a heartbeat failed): rejoin after the
			// shortest wait, which only keeps a loop from spinning.
			wait = minJoinRetry
		case !wasFailing:
			m.logger.Warn("coordination: cannot join the replicas' group; retrying",
				zap.String("group", m.settings.GroupID), zap.Error(err))
		}
		retry := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			retry.Stop()
			return
		case <-retry.C:
		}
		if err != nil {
			wait = min(2*wait, maxJoinRetry)
		}
	}
}

// consume connects if needed, makes sure the topic is there and takes part
// in the group until the session ends.
func (m *Member) consume(ctx context.Context) error {
	client, group, err := m.connect(ctx)
	if err != nil {
		return err
	}
	count, err := m.ensureTopic(client)
	if err != nil {
		m.refused(err)
		return err
	}
	session, end := context.WithCancel(ctx)
	defer end()
	m.mu.Lock()
	m.count = count
	if m.away != nil {
		m.mu.Unlock()
		return nil
	}
	m.endSession = end
	m.mu.Unlock()
	err = group.Consume(session, []string{m.settings.Topic}, &claimHandler{m: m, group: group})
	m.mu.Lock()
	m.endSession = nil
	m.mu.Unlock()
	if err != nil {
		m.refused(err)
		return fmt.Errorf("join coordination group %q: %w", m.settings.GroupID, saslauth.Authentication(err))
	}
	return nil
}

// refused drops the token when the brokers refused it to this client
// (sarama's connections of the group reconnect and re-authenticate on
// their own, and tell only through the errors that reach here), so that the
// next connection, this client's or the cluster's with which it shares the
// token, presents a new one rather than the refused one until it expires.
func (m *Member) refused(err error) {
	if errors.Is(err, sarama.ErrSASLAuthenticationFailed) {
		saslauth.TokenRefused(m.config)
	}
}

// connect returns the client and consumer group, making them first if
// needed. The dial happens outside the lock.
func (m *Member) connect(ctx context.Context) (sarama.Client, sarama.ConsumerGroup, error) {
	m.mu.Lock()
	client, group, closing := m.client, m.group, m.closing
	m.mu.Unlock()
	if closing {
		return nil, nil, errClosed
	}
	if client != nil && !client.Closed() {
		return client, group, nil
	}
	if err := ctx.Err(); err != nil {
		return nil, nil, err
	}
	// sarama takes no context: the dial and metadata deadlines bound this.
	fresh, err := sarama.NewClient(m.brokers, m.config)
	if err != nil {
		m.refused(err)
		return nil, nil, fmt.Errorf("connect to brokers %v (%s): %w", m.brokers, saslauth.Summary(m.config), saslauth.Authentication(err))
	}
	freshGroup, err := sarama.NewConsumerGroupFromClient(m.settings.GroupID, holdOnly{Client: fresh, topic: m.settings.Topic})
	if err != nil {
		_ = fresh.Close()
		return nil, nil, fmt.Errorf("coordination group %q: %w", m.settings.GroupID, err)
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.closing {
		_ = freshGroup.Close()
		_ = fresh.Close()
		return nil, nil, errClosed
	}
	m.client, m.group = fresh, freshGroup
	return fresh, freshGroup, nil
}
