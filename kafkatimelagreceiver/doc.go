// Package kafkatimelagreceiver reports Kafka consumer-group offset lag and time lag.
package kafkatimelagreceiver

// The generated code comes from metadata.yaml: `make generate` at the
// repository root runs the pinned mdatagen.
