package kafkacount

import (
	"encoding/binary"
	"net"
	"sync"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/otelcol-kafkatimelag/otelcol-kafkatimelag/kafkatimelagreceiver/internal/kafka/wirebytes"
)

// Wire counts what an in-process cluster's brokers send on their
// connections: the bytes of each response frame (its 4-byte size and
// body, as written to the socket), by the client id its connection's
// requests name and the API key of the request it answers, and the
// requests themselves, with their bytes. It is the broker's side of a client's
// response-bytes telemetry, measured independently of the client. Serve a
// cluster with kfake.ListenFn(w.Listen).
type Wire struct {
	mu           sync.Mutex
	bytes        map[string]*Counts // client id -> response bytes by API key
	requests     map[string]*Counts // client id -> requests by API key
	requestBytes map[string]*Counts // client id -> request bytes by API key
}

// NewWire returns a counter with nothing counted.
func NewWire() *Wire {
	return &Wire{bytes: map[string]*Counts{}, requests: map[string]*Counts{}, requestBytes: map[string]*Counts{}}
}

// Listen is net.Listen whose accepted connections are counted.
func (w *Wire) Listen(network, address string) (net.Listener, error) {
	l, err := net.Listen(network, address)
	if err != nil {
		return nil, err
	}
	return &wireListener{Listener: l, w: w}, nil
}

// Bytes returns the response bytes sent so far to the clients with the id,
// by API key.
func (w *Wire) Bytes(clientID string) Counts {
	return w.of(w.bytes, clientID)
}

// Requests returns the requests the clients with the id sent so far, by
// API key.
func (w *Wire) Requests(clientID string) Counts {
	return w.of(w.requests, clientID)
}

// RequestBytes returns the bytes of the requests the clients with the id
// sent so far, by API key.
func (w *Wire) RequestBytes(clientID string) Counts {
	return w.of(w.requestBytes, clientID)
}

func (w *Wire) of(m map[string]*Counts, clientID string) Counts {
	w.mu.Lock()
	defer w.mu.Unlock()
	if c := m[clientID]; c != nil {
		return *c
	}
	return Counts{}
}

func (w *Wire) add(m map[string]*Counts, clientID string, key int16, n int64) {
	if key < 0 || key > kmsg.MaxKey {
		return
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if m[clientID] == nil {
		m[clientID] = &Counts{}
	}
	m[clientID][key] += n
}

type wireListener struct {
	net.Listener
	w *Wire
}

func (l *wireListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	return &wireConn{
		Conn: c, w: l.w, inFlight: map[int32]int16{},
		// API key, version, correlation id, client id (length and up to
		// 256 bytes of it).
		requests:  wirebytes.Frames{HeadSize: 2 + 2 + 4 + 2 + 256},
		responses: wirebytes.Frames{HeadSize: 4},
	}, nil
}

// wireConn is a broker's end of a client's connection. The broker reads
// requests on one goroutine and writes responses on another.
type wireConn struct {
	net.Conn
	w *Wire

	mu       sync.Mutex
	clientID string
	inFlight map[int32]int16 // correlation id -> API key

	requests  wirebytes.Frames // Read's alone
	responses wirebytes.Frames // Write's alone
}

func (c *wireConn) Read(p []byte) (int, error) {
	n, err := c.Conn.Read(p)
	c.requests.Feed(p[:n], func(head []byte, frame int64) {
		if len(head) < 10 {
			return
		}
		key := int16(binary.BigEndian.Uint16(head))
		correlation := int32(binary.BigEndian.Uint32(head[4:8]))
		c.mu.Lock()
		if idLen := int(int16(binary.BigEndian.Uint16(head[8:10]))); idLen >= 0 && 10+idLen <= len(head) {
			c.clientID = string(head[10 : 10+idLen])
		}
		c.inFlight[correlation] = key
		clientID := c.clientID
		c.mu.Unlock()
		c.w.add(c.w.requests, clientID, key, 1)
		c.w.add(c.w.requestBytes, clientID, key, frame)
	})
	return n, err
}

// Write counts a response before it is sent: once the client has read it,
// it is counted.
func (c *wireConn) Write(p []byte) (int, error) {
	c.responses.Feed(p, func(head []byte, frame int64) {
		if len(head) < 4 {
			return
		}
		correlation := int32(binary.BigEndian.Uint32(head))
		c.mu.Lock()
		key, ok := c.inFlight[correlation]
		delete(c.inFlight, correlation)
		clientID := c.clientID
		c.mu.Unlock()
		if ok {
			c.w.add(c.w.bytes, clientID, key, frame)
		}
	})
	return c.Conn.Write(p)
}
