package wirebytes

import (
	"bytes"
	"encoding/binary"
	"io"
	"math/rand/v2"
	"net"
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// frame is a Kafka frame: its size, then body.
func frame(body []byte) []byte {
	return append(binary.BigEndian.AppendUint32(nil, uint32(len(body))), body...)
}

// TestFramesSplitAStreamCutAnywhere: whatever pieces a stream comes in,
// each frame is told once, with its head and its size on the wire.
func TestFramesSplitAStreamCutAnywhere(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	type told struct {
		head  string
		frame int64
	}
	for round := range 500 {
		var stream []byte
		var want []told
		for range 1 + rng.IntN(6) {
			body := make([]byte, rng.IntN(40))
			for i := range body {
				body[i] = byte('a' + rng.IntN(26))
			}
			stream = append(stream, frame(body)...)
			want = append(want, told{string(body[:min(6, len(body))]), int64(4 + len(body))})
		}
		f := Frames{HeadSize: 6}
		var got []told
		for rest := stream; len(rest) > 0; {
			n := 1 + rng.IntN(len(rest))
			f.Feed(rest[:n], func(head []byte, size int64) { got = append(got, told{string(head), size}) })
			rest = rest[n:]
		}
		require.Equal(t, want, got, "round %d", round)
	}
}

// scripted is a connection that reads what it was given.
type scripted struct {
	net.Conn
	in      io.Reader
	written bytes.Buffer
}

func (s *scripted) Read(p []byte) (int, error)  { return s.in.Read(p) }
func (s *scripted) Write(p []byte) (int, error) { return s.written.Write(p) }

// request is a request frame's start: API key, version, correlation id.
func request(key int16, correlation int32) []byte {
	b := binary.BigEndian.AppendUint16(nil, uint16(key))
	b = binary.BigEndian.AppendUint16(b, 1)
	b = binary.BigEndian.AppendUint32(b, uint32(correlation))
	return frame(append(b, 0, 0))
}

// response is a response frame of n bytes after its correlation id.
func response(correlation int32, n int) []byte {
	return frame(append(binary.BigEndian.AppendUint32(nil, uint32(correlation)), make([]byte, n)...))
}

// TestCountTellsEachResponseByItsRequest: responses are counted under the
// API of the request with their correlation id, in whatever order they
// come and however they are read; a frame of no request is not counted.
func TestCountTellsEachResponseByItsRequest(t *testing.T) {
	var in []byte
	in = append(in, response(8, 100)...)  // ListOffsets
	in = append(in, response(7, 3000)...) // Fetch
	in = append(in, response(99, 5)...)   // no such request
	s := &scripted{in: bytes.NewReader(in)}
	counted := map[string]int{}
	c := Count(s, func(api string, n int) { counted[api] += n })
	for _, req := range [][]byte{request(1, 7), request(2, 8)} {
		_, err := c.Write(req)
		require.NoError(t, err)
	}
	buf := make([]byte, 13)
	for {
		if _, err := c.Read(buf); err == io.EOF {
			break
		}
	}
	require.Equal(t, map[string]int{"ListOffsets": 4 + 4 + 100, "Fetch": 4 + 4 + 3000}, counted)
	require.Equal(t, 2*len(request(1, 7)), s.written.Len(), "requests pass unchanged")
}

// The names are Kafka's, as franz-go, which names every key, spells them.
func TestAPINames(t *testing.T) {
	for key, name := range apiNames {
		require.Equal(t, kmsg.NameForKey(key), name, "key %d", key)
	}
	require.Equal(t, "ApiKey999", APIName(999))
}
