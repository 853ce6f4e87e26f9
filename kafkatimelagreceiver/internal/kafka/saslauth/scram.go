package saslauth

import (
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/xdg-go/scram"
)

// maxSCRAMIterations is the most PBKDF2 iterations the client computes for
// a broker: Kafka's own maximum (ScramMechanism, 16384), which no broker
// storing credentials Kafka accepts asks beyond. The count comes from the
// server, and xdg-go/scram bounds it only from below: a hostile or
// intercepted broker asking 2^31 would cost minutes of CPU per connection
// attempt, and the receiver reconnects at every scrape.
const maxSCRAMIterations = 16384

// scramClient adapts xdg-go/scram to sarama's SCRAMClient. sarama makes a
// new one per connection, so a conversation is never reused.
type scramClient struct {
	hash  scram.HashGeneratorFcn
	conv  *scram.ClientConversation
	steps int
}

func (c *scramClient) Begin(user, password, authzID string) error {
	client, err := c.hash.NewClient(user, password, authzID)
	if err != nil {
		// xdg-go/scram never echoes the password in this error.
		return fmt.Errorf("SCRAM: %w", err)
	}
	c.conv = client.NewConversation()
	c.steps = 0
	return nil
}

func (c *scramClient) Step(challenge string) (string, error) {
	c.steps++
	if c.steps == 2 {
		// The server-first message: its iteration count is checked before
		// the conversation derives a key from it.
		iterations, err := scramIterations(challenge)
		if err != nil {
			return "", fmt.Errorf("SCRAM: server-first message: %w", err)
		}
		if iterations > maxSCRAMIterations {
			return "", fmt.Errorf("SCRAM: the broker asked for %d PBKDF2 iterations, more than the %d Kafka allows; refusing to authenticate",
				iterations, maxSCRAMIterations)
		}
	}
	return c.conv.Step(challenge)
}

func (c *scramClient) Done() bool {
	return c.conv.Done()
}

// scramIterations reads the iteration count (i=) of a SCRAM server-first
// message (RFC 5802: r=nonce,s=salt,i=count[,extensions]).
func scramIterations(serverFirst string) (int64, error) {
	for field := range strings.SplitSeq(serverFirst, ",") {
		value, ok := strings.CutPrefix(field, "i=")
		if !ok {
			continue
		}
		n, err := strconv.ParseInt(value, 10, 64)
		if err != nil || n < 1 {
			return 0, fmt.Errorf("iteration count %q is not a positive number", value)
		}
		return n, nil
	}
	return 0, errors.New("no iteration count")
}
