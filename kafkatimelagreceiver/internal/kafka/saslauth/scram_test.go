package saslauth

import (
	"encoding/base64"
	"fmt"
	"math"
	"strings"
	"testing"

	"github.com/IBM/sarama"
	"github.com/stretchr/testify/require"

	"github.com/otelcol-kafkatimelag/otelcol-kafkatimelag/kafkatimelagreceiver/internal/kafka"
	"github.com/otelcol-kafkatimelag/otelcol-kafkatimelag/kafkatimelagreceiver/internal/kafka/clientsettings"
)

// securityTestPassword is the password of the SCRAM conversations.
const securityTestPassword = "s3cr3t-Pa55"

// beginSCRAM starts a conversation with the adapter Configure wires for the
// mechanism and returns it with its client-first message.
func beginSCRAM(t *testing.T, mechanism string) (client sarama.SCRAMClient, clientFirst string) {
	t.Helper()
	sc := sarama.NewConfig()
	require.NoError(t, Configure(sc, &clientsettings.SASL{Mechanism: mechanism, Username: "monitor", Password: securityTestPassword, HandshakeVersion: 1}, nil))
	client = sc.Net.SASL.SCRAMClientGeneratorFunc()
	require.NoError(t, client.Begin("monitor", securityTestPassword, ""))
	clientFirst, err := client.Step("")
	require.NoError(t, err)
	return client, clientFirst
}

// scramServerFirst begins a conversation with the adapter and returns the
// server-first message a broker would answer it with, asking for iterations.
func scramServerFirst(t *testing.T, mechanism string, iterations int64) (client sarama.SCRAMClient, serverFirst string) {
	t.Helper()
	client, clientFirst := beginSCRAM(t, mechanism)
	_, nonce, found := strings.Cut(clientFirst, ",r=")
	require.True(t, found, "client-first message %q carries a nonce", clientFirst)
	salt := base64.StdEncoding.EncodeToString([]byte("pepper-and-salt"))
	return client, fmt.Sprintf("r=%sserver-nonce,s=%s,i=%d", nonce, salt, iterations)
}

// TestSCRAMBrokerDemandingHugeIterationCountIsRefused: a hostile or
// intercepted broker answers the client-first message asking for 2^31-1
// PBKDF2 iterations, minutes of CPU per connection attempt. The client
// refuses any count above Kafka's own maximum before deriving a key, and
// still answers counts a real broker may ask for.
func TestSCRAMBrokerDemandingHugeIterationCountIsRefused(t *testing.T) {
	for _, mechanism := range []string{kafka.SASLSCRAMSHA256, kafka.SASLSCRAMSHA512} {
		t.Run(mechanism, func(t *testing.T) {
			for _, iterations := range []int64{4096, kafka.MaxSCRAMIterations} {
				client, serverFirst := scramServerFirst(t, mechanism, iterations)
				clientFinal, err := client.Step(serverFirst)
				require.NoError(t, err, "%d iterations are within what Kafka allows", iterations)
				require.Contains(t, clientFinal, ",p=", "the client proves itself")
			}
			// Just above the maximum first: it costs little to compute,
			// so a client without the bound fails here rather than hang.
			for _, iterations := range []int64{kafka.MaxSCRAMIterations + 1, math.MaxInt32} {
				client, serverFirst := scramServerFirst(t, mechanism, iterations)
				_, err := client.Step(serverFirst)
				require.Error(t, err, "%d iterations", iterations)
				require.ErrorContains(t, err, fmt.Sprint(iterations))
				require.ErrorContains(t, err, fmt.Sprint(kafka.MaxSCRAMIterations))
				require.NotContains(t, err.Error(), securityTestPassword)
			}
		})
	}
}

// TestSCRAMClientConversation runs the adapter against xdg-go/scram's own
// server, so a wiring mistake (wrong hash, reused conversation) shows here
// rather than as an authentication failure against a broker.
func TestSCRAMClientConversation(t *testing.T) {
	client, msg := beginSCRAM(t, kafka.SASLSCRAMSHA512)
	require.Contains(t, msg, "n=monitor")
	require.NotContains(t, msg, securityTestPassword, "SCRAM never sends the password")
	require.False(t, client.Done())
}
