// Package saramacluster implements kafka.Cluster with sarama: it composes
// the reads of the job packages (saramaoffsets: offsets and groups;
// saramatimes: the time index and record reads; saramaretention: topic
// configs and log sizes) on one connection core (saramaconn), which gives
// every call its deadline.
package saramacluster

import (
	"context"

	"github.com/otelcol-kafkatimelag/otelcol-kafkatimelag/kafkatimelagreceiver/internal/kafka"
	"github.com/otelcol-kafkatimelag/otelcol-kafkatimelag/kafkatimelagreceiver/internal/kafka/clientsettings"
	"github.com/otelcol-kafkatimelag/otelcol-kafkatimelag/kafkatimelagreceiver/internal/kafka/saramaconn"
	"github.com/otelcol-kafkatimelag/otelcol-kafkatimelag/kafkatimelagreceiver/internal/kafka/saramaoffsets"
	"github.com/otelcol-kafkatimelag/otelcol-kafkatimelag/kafkatimelagreceiver/internal/kafka/saramaretention"
	"github.com/otelcol-kafkatimelag/otelcol-kafkatimelag/kafkatimelagreceiver/internal/kafka/saramatimes"
)

var (
	_ kafka.Cluster         = (*Cluster)(nil)
	_ kafka.CommitsOnReader = (*Cluster)(nil)
)

// Cluster is a kafka.Cluster speaking to the brokers through sarama: the
// job packages' reads, all on one connection (saramaconn.Conn), which
// connects lazily, so that a collector whose brokers are down still
// starts.
type Cluster struct {
	conn *saramaconn.Conn
	*saramaoffsets.Offsets
	*saramatimes.Times
	*saramaretention.Retention
}

// New builds and validates the client configuration and logs the settings
// that expose credentials. It does not connect: the first call does.
func New(s clientsettings.Settings) (*Cluster, error) {
	conn, err := saramaconn.New(s)
	if err != nil {
		return nil, err
	}
	return on(conn), nil
}

func on(conn *saramaconn.Conn) *Cluster {
	return &Cluster{
		conn:      conn,
		Offsets:   saramaoffsets.New(conn),
		Times:     saramatimes.New(conn),
		Retention: saramaretention.New(conn),
	}
}

// Lane is another Cluster on the same settings and token source, with its
// own connections, client and broker watch, closed with c
// (saramaconn.Conn.Lane): a caller in the background (the sampler) on a
// lane of its own never holds the scrape's requests behind its own slow
// answers, nor has them cut with it.
func (c *Cluster) Lane() (kafka.Cluster, error) {
	lane, err := c.conn.Lane()
	if err != nil {
		return nil, err
	}
	return on(lane), nil
}

// Identify reads the cluster id and the topics' ids
// (saramaconn.Conn.Identify).
func (c *Cluster) Identify(ctx context.Context, topics []string) (*kafka.Identity, error) {
	return c.conn.Identify(ctx, topics)
}

// Tokens is the source of the OAUTHBEARER tokens the connections present,
// nil without one: another client of the same principal (the membership's)
// shares it, so that a token refused to either is dropped for both.
func (c *Cluster) Tokens() clientsettings.TokenSource {
	return c.conn.Tokens()
}

// Close ends every connection, its lanes' too, cutting the requests in
// flight, and later calls fail.
func (c *Cluster) Close() error {
	return c.conn.Close()
}
