// Package kafkatimelagreceiver reports Kafka consumer-group offset lag and time lag.
package kafkatimelagreceiver

//go:generate mdatagen metadata.yaml
