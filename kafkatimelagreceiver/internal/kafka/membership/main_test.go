package membership

import (
	"testing"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) {
	// sarama's metrics registry ticks a meter for the life of the process.
	goleak.VerifyTestMain(m, goleak.IgnoreTopFunction("github.com/rcrowley/go-metrics.(*meterArbiter).tick"))
}
