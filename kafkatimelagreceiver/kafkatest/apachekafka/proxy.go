package apachekafka

import (
	"io"
	"net"
	"sync"
	"time"

	"github.com/otelcol-kafkatimelag/otelcol-kafkatimelag/kafkatimelagreceiver/kafkatest/kafkacount"
)

// proxy stands on a broker's advertised plaintext address and forwards
// every connection to the broker's real listener, through a kafkacount.Wire
// that counts the requests and the bytes of the responses by client id:
// the brokers' side of what the receiver reports of its own traffic.
type proxy struct {
	listener net.Listener
	target   string

	mu    sync.Mutex
	conns map[net.Conn]struct{}
	wg    sync.WaitGroup
}

func startProxy(wire *kafkacount.Wire, addr, target string) (*proxy, error) {
	l, err := wire.Listen("tcp", addr)
	if err != nil {
		return nil, err
	}
	p := &proxy{listener: l, target: target, conns: map[net.Conn]struct{}{}}
	p.wg.Add(1)
	go p.accept()
	return p, nil
}

func (p *proxy) accept() {
	defer p.wg.Done()
	for {
		client, err := p.listener.Accept()
		if err != nil {
			return
		}
		broker, err := net.DialTimeout("tcp", p.target, 5*time.Second)
		if err != nil {
			client.Close()
			continue
		}
		if !p.track(client, broker) {
			return
		}
		p.wg.Add(2)
		go p.pipe(broker, client)
		go p.pipe(client, broker)
	}
}

// track registers a connection pair, or closes it when the proxy is
// closing.
func (p *proxy) track(conns ...net.Conn) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.conns == nil {
		for _, c := range conns {
			c.Close()
		}
		return false
	}
	for _, c := range conns {
		p.conns[c] = struct{}{}
	}
	return true
}

// pipe copies from src to dst until either ends, then closes both.
func (p *proxy) pipe(dst, src net.Conn) {
	defer p.wg.Done()
	// Either side closing ends the copy: nothing to report.
	_, _ = io.Copy(dst, src)
	dst.Close()
	src.Close()
}

// close stops accepting, closes every connection and waits for the
// proxy's goroutines.
func (p *proxy) close() {
	p.listener.Close()
	p.mu.Lock()
	conns := p.conns
	p.conns = nil
	p.mu.Unlock()
	for c := range conns {
		c.Close()
	}
	p.wg.Wait()
}
