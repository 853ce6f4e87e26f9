package saramaconn

import (
	"context"
	"net"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/otelcol-kafkatimelag/otelcol-kafkatimelag/kafkatimelagreceiver/internal/kafka"
	"github.com/otelcol-kafkatimelag/otelcol-kafkatimelag/kafkatimelagreceiver/internal/kafka/clientsettings"
	"github.com/otelcol-kafkatimelag/otelcol-kafkatimelag/kafkatimelagreceiver/kafkatest/saramatest"
)

// A connection that fails at the network (Kafka down, a broker
// restarting) says nothing of the token: it is kept, and the next attempt
// presents it again instead of asking the identity provider for a new one
// at every scrape and sample of the outage.
func TestNetworkErrorKeepsTheToken(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := ln.Addr().String()
	require.NoError(t, ln.Close()) // nothing listens: connection refused

	tokens := &staticTokens{token: "t"}
	s := saramatest.Settings([]string{addr})
	s.SASL = &clientsettings.SASL{Mechanism: kafka.SASLOAuthBearer, HandshakeVersion: 1, Tokens: tokens}
	c, err := New(s)
	require.NoError(t, err)
	defer c.Close()
	for range 3 {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		_, err := c.Connected(ctx)
		cancel()
		require.Error(t, err)
	}
	require.Zero(t, tokens.invalidated, "a refused connection is no refused token")
}
