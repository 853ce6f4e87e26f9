package saramatest

import (
	"encoding/binary"
	"io"
	"net"
	"sync"
	"testing"
)

// ScriptedBroker is a loopback server that answers every request with the
// response body it was last given, whatever was asked, so that sarama
// decodes bytes a test (or a fuzzer) chose. It is closed when the test
// ends.
type ScriptedBroker struct {
	listener net.Listener
	mu       sync.Mutex
	body     []byte
	// cuts is how many of the next responses stop half way, their
	// connection closed (CutNext).
	cuts  int
	conns []net.Conn
	wg    sync.WaitGroup
}

// NewScriptedBroker listens on a loopback port.
func NewScriptedBroker(t testing.TB) *ScriptedBroker {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s := &ScriptedBroker{listener: l}
	s.wg.Add(1)
	go s.accept()
	t.Cleanup(s.close)
	return s
}

// Addr is the address it listens on.
func (s *ScriptedBroker) Addr() string { return s.listener.Addr().String() }

func (s *ScriptedBroker) accept() {
	defer s.wg.Done()
	for {
		conn, err := s.listener.Accept()
		if err != nil {
			return
		}
		s.mu.Lock()
		s.conns = append(s.conns, conn)
		s.mu.Unlock()
		s.wg.Add(1)
		go s.serve(conn)
	}
}

// serve answers each request frame with the correlation id it carries and
// the current body.
func (s *ScriptedBroker) serve(conn net.Conn) {
	defer s.wg.Done()
	header := make([]byte, 4)
	for {
		if _, err := io.ReadFull(conn, header); err != nil {
			return
		}
		req := make([]byte, binary.BigEndian.Uint32(header))
		if _, err := io.ReadFull(conn, req); err != nil || len(req) < 8 {
			return
		}
		s.mu.Lock()
		body, cut := s.body, s.cuts > 0
		if cut {
			s.cuts--
		}
		s.mu.Unlock()
		resp := binary.BigEndian.AppendUint32(nil, uint32(4+len(body)))
		resp = append(resp, req[4:8]...) // correlation id
		resp = append(resp, body...)
		if cut {
			_, _ = conn.Write(resp[:len(resp)/2])
			_ = conn.Close()
			return
		}
		if _, err := conn.Write(resp); err != nil {
			return
		}
	}
}

// CutNext makes the next n responses stop half way and close their
// connection, as a broker does that cannot send a response whole.
func (s *ScriptedBroker) CutNext(n int) {
	s.mu.Lock()
	s.cuts = n
	s.mu.Unlock()
}

// Answer makes body the answer to every request from now on.
func (s *ScriptedBroker) Answer(body []byte) {
	s.mu.Lock()
	s.body = body
	s.mu.Unlock()
}

func (s *ScriptedBroker) close() {
	_ = s.listener.Close()
	s.mu.Lock()
	for _, c := range s.conns {
		_ = c.Close()
	}
	s.mu.Unlock()
	s.wg.Wait()
}
