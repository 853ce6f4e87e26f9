package kafkatimelagreceiver

import "time"

// defaultStatusWindow is Burrow's default window: ten scrapes are enough to
// tell a stalled group from one that happened not to commit for a while.
const defaultStatusWindow = 10

// StatusConfig tunes the Burrow-style status of consumer groups
// (kafka.consumer_group.status and kafka.consumer_group.partition_status).
// Config.Validate checks the ranges of its keys.
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
