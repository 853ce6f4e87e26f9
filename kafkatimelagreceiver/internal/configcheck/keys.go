package configcheck

import "time"

// The ranges of the receiver's number and duration keys. A floor keeps a
// typo (a missing unit reads as nanoseconds) from turning a periodic job
// into a loop against the brokers or the disk; a ceiling keeps a value from
// wrapping or from making the receiver useless. docs/configuration.md lists
// them with these reasons.
var (
	// CollectionInterval: every scrape lists, fetches the commits of and
	// describes every group; more than once a second is load on the group
	// coordinators that no lag alert needs. A look less often than hourly
	// misses whole incidents.
	CollectionInterval = Duration{Key: "collection_interval", Min: time.Second, Max: time.Hour}
	// InitialDelay only delays the first scrape.
	InitialDelay = Duration{Key: "initial_delay", Min: 0, Max: time.Hour}
	// Timeout bounds each Kafka request and the whole scrape: below a second
	// a busy broker's answer (hundreds of milliseconds at its p99) fails the
	// scrape; beyond ten minutes a broker that does not answer holds it.
	Timeout = Duration{Key: "timeout", Zero: "the default", Min: time.Second, Max: 10 * time.Minute}
	// SamplingInterval: each sample is a ListOffsets request to every
	// leader; a table sampled less than hourly dates records only to the
	// hour.
	SamplingInterval = Duration{Key: "sampling_interval", Min: 100 * time.Millisecond, Max: time.Hour}
	// MaxSamples: a table keeps at least its two ends; 10000 points cap each
	// table at 160 KiB, and the bound multiplies by every tracked partition.
	MaxSamples = Int{Key: "max_samples", Min: 2, Max: 10000}
	// MaxRecordReadsPerScrape: 0 turns record reads off. No ceiling: a
	// scrape reads only the partitions that need it.
	MaxRecordReadsPerScrape = Int{Key: "max_record_reads_per_scrape", Min: 0}
	// MaxRecordReadBytesPerScrape: 0 leaves to the time index what it
	// can answer and reads nothing. A GiB a scrape is already more than a
	// collector should pull from the brokers to date records.
	MaxRecordReadBytesPerScrape = Int{Key: "max_record_read_bytes_per_scrape", Min: 0, Max: 1 << 30}
	// StorageInterval: each save rewrites every table; more than once a
	// second is disk and CPU for at most a second of history saved. A day
	// bounds what a crash loses (tables are also saved at shutdown).
	StorageInterval = Duration{Key: "storage_interval", Min: time.Second, Max: 24 * time.Hour}
	// RateWindow: a rate over less than a second is noise; one over more
	// than a day has smoothed away the incident it should show.
	RateWindow = Duration{Key: "rate_window", Min: time.Second, Max: 24 * time.Hour}
	// StatusWindow: Burrow's rules need two scrapes to see a trend. The
	// ceiling keeps the window far inside the 32-bit counters it is kept
	// in: 10000 scrapes are three and a half days at the default interval.
	StatusWindow = Int{Key: "status::window", Min: 2, Max: 10000}
	// StatusMaxTimeLag: below a second nearly every partition of a group
	// that keeps up would be WARN: it is still up to a commit interval
	// behind (5 s by default). No ceiling: a large one never fires.
	StatusMaxTimeLag = Duration{Key: "status::max_time_lag", Zero: "off", Min: time.Second}

	// ConnIdleTimeout: a connection idle for longer is reopened before its
	// next request; below a second, requests of one scrape would reconnect.
	ConnIdleTimeout = Duration{Key: "conn_idle_timeout", Min: time.Second}
	// DialTimeout: below a second a TLS handshake with a broker in another
	// region or under load can fail; the kernel gives up a TCP connect after
	// about two minutes (tcp_syn_retries 6: 127 s) whatever the timeout says.
	DialTimeout = Duration{Key: "dial_timeout", Min: time.Second, Max: 2 * time.Minute}
	// MetadataRefreshInterval: each refresh is a Metadata request for the
	// whole cluster; leadership changes are caught by the errors they cause,
	// so more than every ten seconds only loads the brokers.
	MetadataRefreshInterval = Duration{Key: "metadata::refresh_interval", Min: 10 * time.Second}
	// MetadataRetryMax: no ceiling, the request timeout bounds the retries.
	MetadataRetryMax = Int{Key: "metadata::retry::max", Min: 0}
	// MetadataRetryBackoff: a wait longer than a minute outlasts any
	// request timeout it is spent in.
	MetadataRetryBackoff = Duration{Key: "metadata::retry::backoff", Zero: "no wait", Min: time.Millisecond, Max: time.Minute}

	// CoordinationTopicPartitions: each partition a replica holds is a
	// claim in the Kafka client.
	CoordinationTopicPartitions = Int{Key: "coordination::topic_partitions", Min: 1, Max: 10000}
	// CoordinationTopicReplicationFactor: the request field is 16 bits.
	CoordinationTopicReplicationFactor = Int{Key: "coordination::topic_replication_factor", Or: -1, OrMeans: "the brokers' default", Min: 1, Max: 32767}
	// CoordinationSessionTimeout: below a second a GC pause or a slow
	// heartbeat hands a replica's groups to the others; brokers refuse more
	// than their group.max.session.timeout.ms, 30 minutes by default (and
	// less than group.min.session.timeout.ms, 6 s).
	CoordinationSessionTimeout = Duration{Key: "coordination::session_timeout", Min: time.Second, Max: 30 * time.Minute}
	// CoordinationHeartbeatInterval: at most a third of session_timeout too
	// (checked beside it).
	CoordinationHeartbeatInterval = Duration{Key: "coordination::heartbeat_interval", Min: 100 * time.Millisecond, Max: 10 * time.Minute}
)

// Range is a key's range as docs/configuration.md states it.
type Range interface {
	Range() string
}

// All maps each key with a range to it, for the docs' test.
func All() map[string]Range {
	out := map[string]Range{}
	for _, d := range []Duration{CollectionInterval, InitialDelay, Timeout, SamplingInterval, StorageInterval, RateWindow,
		StatusMaxTimeLag, ConnIdleTimeout, DialTimeout, MetadataRefreshInterval, MetadataRetryBackoff,
		CoordinationSessionTimeout, CoordinationHeartbeatInterval} {
		out[d.Key] = d
	}
	for _, i := range []Int{MaxSamples, MaxRecordReadsPerScrape, MaxRecordReadBytesPerScrape, StatusWindow, MetadataRetryMax,
		CoordinationTopicPartitions, CoordinationTopicReplicationFactor} {
		out[i.Key] = i
	}
	return out
}
