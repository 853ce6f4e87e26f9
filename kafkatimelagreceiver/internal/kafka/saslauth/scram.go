package saslauth

import (
	"fmt"

	"github.com/xdg-go/scram"

	"github.com/otelcol-kafkatimelag/otelcol-kafkatimelag/kafkatimelagreceiver/internal/kafka"
)

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
		// the conversation derives a key from it (xdg-go/scram bounds it
		// only from below).
		if err := kafka.CheckSCRAMIterations(challenge); err != nil {
			return "", err
		}
	}
	return c.conv.Step(challenge)
}

func (c *scramClient) Done() bool {
	return c.conv.Done()
}
