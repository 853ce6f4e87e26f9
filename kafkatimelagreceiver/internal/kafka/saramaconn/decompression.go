package saramaconn

import "github.com/IBM/sarama"

// MaxDecompressedBatch bounds what one compressed record batch may inflate
// to when a record read decodes it. sarama decompresses whole batches and by
// default without bound, so anyone who can produce to a monitored topic
// could make a batch of a few kilobytes that inflates to gigabytes at the
// offset a stuck group is committed at. Legitimate batches stay far below
// it: producers cap a batch at max.message.bytes (1 MiB by default) before
// compression in most clients, and compression rarely gains more than 10x.
// A batch above it gives no timestamp (kafka.RecordUntimed).
const MaxDecompressedBatch = 16 << 20

func init() {
	// sarama's bound is one variable for the whole process, read while any
	// response is decoded: set before any goroutine can decode, and only
	// ever lowered, so that a stricter bound set by another user of sarama
	// in the same collector stays. It is set in the core, which every
	// package of the receiver that reads through sarama imports (the
	// membership's consumer group too), not with the record reads alone.
	if sarama.MaxDecompressedBatchSize <= 0 || sarama.MaxDecompressedBatchSize > MaxDecompressedBatch {
		sarama.MaxDecompressedBatchSize = MaxDecompressedBatch
	}
}
