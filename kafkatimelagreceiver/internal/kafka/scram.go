package kafka

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
)

// MaxSCRAMIterations is the most PBKDF2 iterations a client computes for a
// broker: Kafka's own maximum (ScramMechanism, 16384), which no broker
// storing credentials Kafka accepts asks beyond. The count comes from the
// server: a hostile or intercepted broker asking 2^31 would cost minutes of
// CPU per connection attempt, and the receiver reconnects at every scrape.
const MaxSCRAMIterations = 16384

// CheckSCRAMIterations reads the iteration count (i=) of a SCRAM
// server-first message (RFC 5802: r=nonce,s=salt,i=count[,extensions]) and
// refuses one above MaxSCRAMIterations, before a key is derived from it.
func CheckSCRAMIterations(serverFirst string) error {
	for field := range strings.SplitSeq(serverFirst, ",") {
		value, ok := strings.CutPrefix(field, "i=")
		if !ok {
			continue
		}
		n, err := strconv.ParseInt(value, 10, 64)
		if err != nil || n < 1 {
			return fmt.Errorf("SCRAM: server-first message: iteration count %q is not a positive number", value)
		}
		if n > MaxSCRAMIterations {
			return fmt.Errorf("SCRAM: the broker asked for %d PBKDF2 iterations, more than the %d Kafka allows; refusing to authenticate",
				n, MaxSCRAMIterations)
		}
		return nil
	}
	return errors.New("SCRAM: server-first message: no iteration count")
}
