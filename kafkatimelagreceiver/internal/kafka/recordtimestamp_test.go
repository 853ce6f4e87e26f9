package kafka_test

import (
	"testing"
	"unsafe"

	"github.com/otelcol-kafkatimelag/otelcol-kafkatimelag/kafkatimelagreceiver/internal/kafka"
)

// The record cache keeps a RecordTimestamp per record it dated.
func TestRecordTimestampSize(t *testing.T) {
	if unsafe.Sizeof(uintptr(0)) != 8 {
		t.Skip("sizes are those of a 64-bit platform")
	}
	if got := unsafe.Sizeof(kafka.RecordTimestamp{}); got != 32 {
		t.Fatalf("RecordTimestamp is %d bytes, want 32", got)
	}
}
