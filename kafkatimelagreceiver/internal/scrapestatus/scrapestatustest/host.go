// Package scrapestatustest helps test the component statuses a receiver
// reports.
package scrapestatustest

import (
	"sync"

	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/component/componentstatus"
	"go.opentelemetry.io/collector/component/componenttest"
)

// Host is a collector host that records the status events reported to it,
// as the service does for the health check.
type Host struct {
	component.Host
	mu     sync.Mutex
	events []*componentstatus.Event
}

func NewHost() *Host { return &Host{Host: componenttest.NewNopHost()} }

func (h *Host) Report(ev *componentstatus.Event) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.events = append(h.events, ev)
}

// Events returns the events reported so far, in order.
func (h *Host) Events() []*componentstatus.Event {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]*componentstatus.Event(nil), h.events...)
}

// Statuses returns the statuses reported so far, in order.
func (h *Host) Statuses() []componentstatus.Status {
	events := h.Events()
	out := make([]componentstatus.Status, len(events))
	for i, ev := range events {
		out[i] = ev.Status()
	}
	return out
}

// Last returns the last event reported.
func (h *Host) Last() *componentstatus.Event {
	events := h.Events()
	return events[len(events)-1]
}
