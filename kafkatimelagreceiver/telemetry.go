package kafkatimelagreceiver

import (
	"context"
	"sync"
)

// requestMetrics counts the Kafka requests the receiver sends, by API, and
// how many of them failed.
type requestMetrics struct {
	mu     sync.Mutex
	sent   map[string]int64
	failed map[string]int64
}

func newRequestMetrics() *requestMetrics {
	return &requestMetrics{sent: map[string]int64{}, failed: map[string]int64{}}
}

func (m *requestMetrics) request(_ context.Context, api string, err error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.sent[api]++
	if err != nil {
		m.failed[api]++
	}
}

// snapshot returns the counts so far, by API.
func (m *requestMetrics) snapshot() (sent, failed map[string]int64) {
	m.mu.Lock()
	defer m.mu.Unlock()
	sent = make(map[string]int64, len(m.sent))
	failed = make(map[string]int64, len(m.failed))
	for k, v := range m.sent {
		sent[k] = v
	}
	for k, v := range m.failed {
		failed[k] = v
	}
	return sent, failed
}
