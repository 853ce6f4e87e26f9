// Package batchguard reads Kafka record batches without a Kafka client: it
// checks each Fetch response on the wire before the client decodes it
// (Guard), bounding what its compressed batches inflate to, and finds the
// first data record at or after an offset in decoded batches (FirstRecord).
package batchguard

import (
	"encoding/binary"
	"io"
	"net"
	"sync"

	"github.com/otelcol-kafkatimelag/otelcol-kafkatimelag/kafkatimelagreceiver/internal/kafka"
)

// apiKeyFetch is the Kafka API key of Fetch requests.
const apiKeyFetch = 1

// guardedConn is a broker connection, below the Kafka client and above
// TLS, that reads each Fetch response whole and checks it (fetchScan)
// before the client decodes it: sarama decodes a response in one go, with
// no hook between its bytes and its decompression. Other responses stream
// through.
type guardedConn struct {
	net.Conn
	refused *Refusals
	// maxResponse is the client's own bound on a response: one over it is
	// refused by the client before it is read, so it is not read here.
	maxResponse int64

	mu      sync.Mutex
	fetches map[int32]int16 // correlation id -> version, of Fetch requests in flight

	// The response being read: its size and correlation id, then, for a
	// Fetch, the whole frame; serve is what is left to hand to sarama, then
	// stream what is left to pass through unread.
	head         [8]byte
	headN        int
	frame        []byte
	frameN       int
	frameVersion int16
	serve        []byte
	stream       int
}

// Guard is conn with every Fetch response checked before it is read; the
// partitions whose batches were refused, and why, go to refused.
// maxResponse is the client's bound on a response's size.
func Guard(conn net.Conn, maxResponse int64, refused *Refusals) net.Conn {
	return &guardedConn{Conn: conn, refused: refused, maxResponse: maxResponse, fetches: map[int32]int16{}}
}

// Refusals remembers why a partition's batch was refused, for the error of
// the read that isolates it. The zero value is ready to use.
type Refusals struct {
	mu      sync.Mutex
	reasons map[kafka.TopicPartition]error
}

// refuse remembers why tp's batch was refused.
func (r *Refusals) refuse(tp kafka.TopicPartition, reason error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.reasons == nil {
		r.reasons = map[kafka.TopicPartition]error{}
	}
	r.reasons[tp] = reason
}

// Take is, once, why tp's batch was last refused; nil when it was not.
func (r *Refusals) Take(tp kafka.TopicPartition) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	reason := r.reasons[tp]
	delete(r.reasons, tp)
	return reason
}

// Write notes the Fetch requests: sarama writes each request in one call,
// from its size on.
func (g *guardedConn) Write(b []byte) (int, error) {
	if len(b) >= 12 && binary.BigEndian.Uint16(b[4:6]) == apiKeyFetch {
		g.mu.Lock()
		g.fetches[int32(binary.BigEndian.Uint32(b[8:12]))] = int16(binary.BigEndian.Uint16(b[6:8]))
		g.mu.Unlock()
	}
	return g.Conn.Write(b)
}

// Read never reads past the frame being read: SASL's raw frames carry no
// correlation id, and their answers come only once asked.
func (g *guardedConn) Read(p []byte) (int, error) {
	for {
		switch {
		case len(g.serve) > 0:
			n := copy(p, g.serve)
			g.serve = g.serve[n:]
			return n, nil
		case g.stream > 0:
			n, err := g.Conn.Read(p[:min(len(p), g.stream)])
			g.stream -= n
			return n, err
		case g.frame != nil:
			n, err := io.ReadFull(g.Conn, g.frame[g.frameN:])
			if g.frameN += n; err != nil {
				return 0, err
			}
			g.finishFetch()
		default:
			if err := g.readHead(); err != nil {
				return 0, err
			}
		}
	}
}

// readHead reads a frame's size and, when it has one, correlation id, and
// decides whether to check the frame or stream it.
func (g *guardedConn) readHead() error {
	want := 4
	if g.headN >= 4 && binary.BigEndian.Uint32(g.head[:4]) >= 4 {
		want = 8
	}
	n, err := io.ReadFull(g.Conn, g.head[g.headN:want])
	if g.headN += n; err != nil {
		return err
	}
	size := int64(binary.BigEndian.Uint32(g.head[:4]))
	if g.headN == 4 && size >= 4 {
		return nil // on to the correlation id
	}
	g.headN = 0
	if size < 4 {
		g.serve, g.stream = append([]byte(nil), g.head[:4]...), int(size)
		return nil
	}
	g.mu.Lock()
	correlation := int32(binary.BigEndian.Uint32(g.head[4:8]))
	version, isFetch := g.fetches[correlation]
	delete(g.fetches, correlation)
	g.mu.Unlock()
	if !isFetch || version > 11 || size > g.maxResponse {
		// sarama refuses a response over its limit before reading it;
		// fetchScan walks the versions the receiver asks (up to 11).
		g.serve, g.stream = append([]byte(nil), g.head[:8]...), int(size-4)
		return nil
	}
	g.frame = make([]byte, 8+size-4)
	copy(g.frame, g.head[:8])
	g.frameN, g.frameVersion = 8, version
	return nil
}

// finishFetch checks a whole Fetch response and hands it to sarama.
func (g *guardedConn) finishFetch() {
	frame := g.frame
	g.frame, g.frameN = nil, 0
	fetchScan(frame[8:], g.frameVersion, g.refused.refuse)
	g.serve = frame
}
