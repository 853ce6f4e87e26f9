//go:build !unit

package kafkatimelagreceiver

import (
	"context"
	"fmt"
	"net"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kfake"
	"go.uber.org/zap"
)

// cuttableListeners are kfake's listeners, keeping every connection they
// accept so that a test can cut them all at once: a broker restarting, a
// load balancer in front of the brokers dropping its connections.
type cuttableListeners struct {
	mu    sync.Mutex
	conns []net.Conn
}

func (c *cuttableListeners) listen(network, address string) (net.Listener, error) {
	ln, err := net.Listen(network, address)
	if err != nil {
		return nil, err
	}
	return &trackingListener{Listener: ln, owner: c}, nil
}

func (c *cuttableListeners) cut() {
	c.mu.Lock()
	conns := c.conns
	c.conns = nil
	c.mu.Unlock()
	for _, conn := range conns {
		_ = conn.Close()
	}
}

type trackingListener struct {
	net.Listener
	owner *cuttableListeners
}

func (l *trackingListener) Accept() (net.Conn, error) {
	conn, err := l.Listener.Accept()
	if err == nil {
		l.owner.mu.Lock()
		l.owner.conns = append(l.owner.conns, conn)
		l.owner.mu.Unlock()
	}
	return conn, err
}

// revocableBroker is an oauthBroker that accepts the identity provider's
// tokens until they are revoked.
func revocableBroker() (*oauthBroker, func(token string)) {
	var mu sync.Mutex
	revoked := map[string]bool{}
	ob := &oauthBroker{accept: func(token string, _ map[string]string) (string, bool) {
		mu.Lock()
		defer mu.Unlock()
		return secMonitorUser, !revoked[token]
	}}
	return ob, func(token string) {
		mu.Lock()
		revoked[token] = true
		mu.Unlock()
	}
}

// presentedAfter tells whether token was presented after the first
// presentation of next.
func presentedAfter(presented []string, token, next string) bool {
	i := slices.Index(presented, next)
	return i >= 0 && slices.Contains(presented[i:], token)
}

// requireJoinsAfterScraping scrapes until the replica has joined: it joins
// once its first scrape has read the topics' loads (or after the initial
// delay and a collection interval).
func requireJoinsAfterScraping(t *testing.T, s *timeLagScraper, msg string) {
	t.Helper()
	require.Eventually(t, func() bool {
		_, _ = s.scrape(context.Background()) // fails until it has joined
		return s.membership.Assignment().Joined
	}, 30*time.Second, 20*time.Millisecond, msg)
}

// TestOAuthBearerRefusedTokenDroppedByEveryClient: the scrape's client and
// the coordination client share one token (one grant for both), and a
// token the brokers refuse on an established client, its connections cut
// and reopened (a broker restart after the token was revoked), is dropped
// by whichever client is refused first: the next connection of either
// presents a new one, which the identity provider grants once, instead of
// the refused token until it expires (an hour here). The coordination
// client recovers on its own, without a scrape to invalidate the token.
// Connections cut while the token is good cost no grant.
func TestOAuthBearerRefusedTokenDroppedByEveryClient(t *testing.T) {
	t.Run("coordination", func(t *testing.T) {
		idp := newTestIdP(t, func(n int32) (string, int) { return fmt.Sprintf("token-%d", n), 3600 })
		ob, revoke := revocableBroker()
		listeners := &cuttableListeners{}
		k := newOAuthTestKafka(t, 1, ob, kfake.GroupMinSessionTimeout(100*time.Millisecond), kfake.ListenFn(listeners.listen))
		secFixture(k)
		cfg := coordinatedTokenConfig(k, idp.url)
		s, _ := startObservedScraper(t, cfg, zap.NewAtomicLevelAt(zap.InfoLevel))
		requireJoinsAfterScraping(t, s, "the replica joins")
		requireBillingLag(t, s)
		// Cut connections are no refused token: both clients reconnect
		// with the one they have.
		listeners.cut()
		requireScrapeRecovers(t, s)
		time.Sleep(3 * cfg.Coordination.HeartbeatInterval)
		require.True(t, s.membership.Assignment().Joined)
		granted := idp.grants.Load()
		joined := s.membership.Assignment().Generation

		for n := range granted {
			revoke(fmt.Sprintf("token-%d", n+1))
		}
		fresh := fmt.Sprintf("token-%d", granted+1)
		listeners.cut()
		// No scrape: only the coordination client reconnects.
		require.Eventually(t, func() bool {
			a := s.membership.Assignment()
			return a.Joined && a.Generation > joined
		}, 30*time.Second, 20*time.Millisecond, "the coordination client rejoins; presented: %v", ob.presented())
		requireScrapeRecovers(t, s)
		presented := ob.presented()
		t.Logf("presented: %v (%d refused)", presented, ob.refusals())
		require.LessOrEqual(t, ob.refusals(), maxRefusals, "only the Kafka client's own retries present a refused token")
		require.EqualValues(t, 1, granted, "one token for both clients")
		require.EqualValues(t, 2, idp.grants.Load(), "one grant after the refusal, for both clients")
		for n := range granted {
			refused := fmt.Sprintf("token-%d", n+1)
			require.False(t, presentedAfter(presented, refused, fresh), "%s is not presented once %s was: %v", refused, fresh, presented)
		}
	})

	t.Run("refused from the start", func(t *testing.T) {
		idp := newTestIdP(t, func(n int32) (string, int) { return fmt.Sprintf("token-%d", n), 3600 })
		ob, revoke := revocableBroker()
		revoke("token-1")
		k := newOAuthTestKafka(t, 1, ob, kfake.GroupMinSessionTimeout(100*time.Millisecond))
		secFixture(k)
		cfg := coordinatedTokenConfig(k, idp.url)
		s, _ := startObservedScraper(t, cfg, zap.NewAtomicLevelAt(zap.InfoLevel))
		requireJoinsAfterScraping(t, s, "the coordination client joins with a new token")
		requireScrapeRecovers(t, s)
		presented := ob.presented()
		t.Logf("presented: %v (%d refused)", presented, ob.refusals())
		require.LessOrEqual(t, ob.refusals(), maxRefusals, "only the Kafka client's own retries present a refused token")
		require.False(t, presentedAfter(presented, "token-1", "token-2"), "%v", presented)
		require.EqualValues(t, 2, idp.grants.Load(), "one grant after the refusal, for both clients")
	})

	t.Run("scrape", func(t *testing.T) {
		idp := newTestIdP(t, func(n int32) (string, int) { return fmt.Sprintf("token-%d", n), 3600 })
		ob, revoke := revocableBroker()
		listeners := &cuttableListeners{}
		k := newOAuthTestKafka(t, 2, ob, kfake.ListenFn(listeners.listen))
		secFixture(k)
		cfg := clientCredentialsConfig(k, idp.url)
		cfg.Timeout = 3 * time.Second
		s, _ := startObservedScraper(t, cfg, zap.NewAtomicLevelAt(zap.InfoLevel))
		requireBillingLag(t, s)
		listeners.cut()
		requireScrapeRecovers(t, s)
		require.EqualValues(t, 1, idp.grants.Load(), "cut connections are no refused token")

		revoke("token-1")
		listeners.cut()
		requireScrapeRecovers(t, s)
		require.Contains(t, ob.presented(), "token-2")
		presented := ob.presented()
		t.Logf("presented: %v (%d refused)", presented, ob.refusals())
		require.LessOrEqual(t, ob.refusals(), maxRefusals, "only the Kafka client's own retries present a refused token")
		require.False(t, presentedAfter(presented, "token-1", "token-2"), "the refused token is not presented once a new one was: %v", presented)
		require.EqualValues(t, 2, idp.grants.Load())
	})
}

// requireScrapeRecovers scrapes until a scrape succeeds (the first after
// the connections were cut fails on them) and requires the billing lag of
// the next.
func requireScrapeRecovers(t *testing.T, s *timeLagScraper) {
	t.Helper()
	require.Eventually(t, func() bool {
		_, err := s.scrape(t.Context())
		return err == nil
	}, 30*time.Second, 100*time.Millisecond, "a scrape succeeds again")
	requireBillingLag(t, s)
}

// maxRefusals bounds how often the refused token is presented: the Kafka
// client's own retries within a request or heartbeat (metadata::retry::max,
// 3 for the membership: 4 attempts) in each of the two clients.
const maxRefusals = 2 * 4

// coordinatedTokenConfig is clientCredentialsConfig with coordination, its
// sessions short.
func coordinatedTokenConfig(k *testKafka, tokenURL string) *Config {
	cfg := clientCredentialsConfig(k, tokenURL)
	cfg.Timeout = 3 * time.Second
	cfg.Coordination.GroupID = "lag-replicas"
	cfg.Coordination.TopicPartitions = 4
	cfg.Coordination.SessionTimeout = time.Second
	cfg.Coordination.HeartbeatInterval = 100 * time.Millisecond
	return cfg
}
