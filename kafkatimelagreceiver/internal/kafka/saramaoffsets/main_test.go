package saramaoffsets

import (
	"testing"

	"go.uber.org/goleak"

	"github.com/otelcol-kafkatimelag/otelcol-kafkatimelag/kafkatimelagreceiver/internal/kafka/clientsettings"
	"github.com/otelcol-kafkatimelag/otelcol-kafkatimelag/kafkatimelagreceiver/internal/kafka/saramaconn"
	"github.com/otelcol-kafkatimelag/otelcol-kafkatimelag/kafkatimelagreceiver/kafkatest/saramatest"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m, saramatest.IgnoreMeterArbiter)
}

// testReads are the package's reads on a connection of their own, which
// Close closes.
type testReads struct {
	*Offsets
	*saramaconn.Conn
}

// open is New on a connection of its own with the settings.
func open(s clientsettings.Settings) (*testReads, error) {
	conn, err := saramaconn.New(s)
	if err != nil {
		return nil, err
	}
	return &testReads{Offsets: New(conn), Conn: conn}, nil
}
