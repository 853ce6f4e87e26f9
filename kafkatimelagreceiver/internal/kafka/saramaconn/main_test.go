package saramaconn

import (
	"testing"

	"go.uber.org/goleak"

	"github.com/otelcol-kafkatimelag/otelcol-kafkatimelag/kafkatimelagreceiver/kafkatest/saramatest"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m, saramatest.IgnoreMeterArbiter)
}

const securityTestPassword = "s3cr3t-Pa55"
