// Package wirebytes measures what Kafka connections carry, by API: the size
// of each response frame as it crosses the connection (its 4-byte size and
// its body, before any decoding or decompression, TLS excluded), told to
// the API of the request with the same correlation id. Frames splits a
// byte stream into Kafka frames for it; Count wraps a client's connection.
package wirebytes

import (
	"encoding/binary"
	"net"
	"sync"
)

// Frames splits one direction of a Kafka connection into frames (a 4-byte
// big-endian size, then that many bytes), handed over in pieces of any
// size. The zero value is ready; HeadSize of 0 keeps no head.
type Frames struct {
	// HeadSize is how many bytes of each frame's body Feed hands to its
	// callback (fewer when the body is shorter).
	HeadSize int

	size     [4]byte
	sizeN    int
	left     int64 // body bytes of the current frame still to come
	head     []byte
	headDone bool
	frame    int64
}

// Feed reads p, calling onHead once per frame, as soon as the frame's first
// HeadSize body bytes (or its whole body) have come, with those bytes (only
// valid during the call) and the frame's size on the wire, its 4-byte size
// included.
func (f *Frames) Feed(p []byte, onHead func(head []byte, frame int64)) {
	for len(p) > 0 {
		if f.sizeN < 4 {
			n := copy(f.size[f.sizeN:], p)
			f.sizeN += n
			p = p[n:]
			if f.sizeN < 4 {
				return
			}
			f.left = int64(int32(binary.BigEndian.Uint32(f.size[:])))
			f.left = max(f.left, 0)
			f.frame = 4 + f.left
			f.head, f.headDone = f.head[:0], false
		}
		if !f.headDone {
			want := int(min(int64(f.HeadSize), f.frame-4)) - len(f.head)
			n := min(want, len(p))
			f.head = append(f.head, p[:n]...)
			if n == want {
				f.headDone = true
				onHead(f.head, f.frame)
			}
		}
		n := int(min(f.left, int64(len(p))))
		f.left -= int64(n)
		p = p[n:]
		if f.left == 0 {
			f.sizeN = 0
		}
	}
}

// Counter is told the bytes of each response a broker sent, by API name.
type Counter func(api string, bytes int)

// conn is a client's connection whose responses are measured.
type conn struct {
	net.Conn
	count Counter

	mu       sync.Mutex
	inFlight map[int32]int16 // correlation id -> API key
	read     Frames          // only Read touches it, from one goroutine
}

// Count wraps a client's connection to a broker: each response it reads is
// told to count under the API of its request. It relies on the client
// writing each request in one Write call, from its size on, as sarama does.
// Frames of no request written (the raw tokens of SASL v0 handshakes and of
// Kerberos, before any request) are not counted.
func Count(c net.Conn, count Counter) net.Conn {
	return &conn{Conn: c, count: count, inFlight: map[int32]int16{}, read: Frames{HeadSize: 4}}
}

func (c *conn) Write(b []byte) (int, error) {
	// size, API key, version, correlation id
	if len(b) >= 12 {
		if key := int16(binary.BigEndian.Uint16(b[4:6])); key >= 0 {
			c.mu.Lock()
			c.inFlight[int32(binary.BigEndian.Uint32(b[8:12]))] = key
			c.mu.Unlock()
		}
	}
	return c.Conn.Write(b)
}

func (c *conn) Read(p []byte) (int, error) {
	n, err := c.Conn.Read(p)
	c.read.Feed(p[:n], func(head []byte, frame int64) {
		if len(head) < 4 {
			return
		}
		correlation := int32(binary.BigEndian.Uint32(head))
		c.mu.Lock()
		key, ok := c.inFlight[correlation]
		delete(c.inFlight, correlation)
		c.mu.Unlock()
		if ok {
			c.count(APIName(key), int(frame))
		}
	})
	return n, err
}
