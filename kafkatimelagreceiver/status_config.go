package kafkatimelagreceiver

import (
	"errors"
	"fmt"
	"time"
)

// defaultStatusWindow is Burrow's default window: ten scrapes are enough to
// tell a stalled group from one that happened not to commit for a while.
const defaultStatusWindow = 10

// StatusConfig tunes the Burrow-style status of consumer groups
// (kafka.consumer_group.status and kafka.consumer_group.partition_status).
type StatusConfig struct {
	// Window is how many of a partition's most recent scrapes its status is
	// judged on. STOP, STALL and WARN need that many scrapes of history, so
	// it also sets how long they take to show: window × collection_interval.
	Window int `mapstructure:"window"`
	// MaxTimeLag, when positive, makes a partition whose time lag is above
	// it at least WARN, even while its lag shrinks: Burrow's rules cannot
	// see a group that keeps up in records but sits far behind in time.
	MaxTimeLag time.Duration `mapstructure:"max_time_lag"`
}

// Validate: confmap prefixes the error with status.
func (c StatusConfig) Validate() error {
	var errs []error
	if c.Window < 2 {
		errs = append(errs, fmt.Errorf("window: must be at least 2, got %d", c.Window))
	}
	if c.MaxTimeLag < 0 {
		errs = append(errs, fmt.Errorf("max_time_lag: must not be negative, got %s", c.MaxTimeLag))
	}
	return errors.Join(errs...)
}
