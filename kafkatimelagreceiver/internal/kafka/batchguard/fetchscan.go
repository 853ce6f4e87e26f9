package batchguard

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"

	"github.com/klauspost/compress/gzip"
	"github.com/klauspost/compress/s2"
	"github.com/klauspost/compress/snappy/xerial"
	"github.com/klauspost/compress/zstd"
	"github.com/pierrec/lz4/v4"

	"github.com/otelcol-kafkatimelag/otelcol-kafkatimelag/kafkatimelagreceiver/internal/kafka"
)

// MaxDecompressedResponse bounds what the compressed batches of one Fetch
// response inflate to, in all. sarama bounds each batch (and each old-format
// wrapper) on its own, and decodes every batch of a response at once, so
// without it a response of a thousand small batches that inflate to 16 MiB
// each (anyone who can produce to a monitored topic can write them), or an
// old-format wrapper holding wrappers that each inflate to 16 MiB, is
// gigabytes from one record read.
const MaxDecompressedResponse = 32 << 20

// codecInvalid is the codec the first compressed batch of a refused response
// is given, so that the client stops there with a decoding error before it
// inflates anything: the read then isolates the partition and asks Refusals
// why.
const codecInvalid = 7

var errNestedCompression = errors.New("a compressed old-format (v0/v1) message set holds a compressed message: nested compression, which Kafka never writes")

// fetchScan checks a Fetch response body of the given version before sarama
// decodes it: it inflates every compressed batch once, counting the bytes
// against MaxDecompressedResponse, and refuses nested old-format
// compression. A refused response has its first compressed batch marked
// codecInvalid in body, and refused is told which partition held the batch
// that was refused, and why. A body it cannot walk is left as it is, for
// sarama to judge.
func fetchScan(body []byte, version int16, refused func(kafka.TopicPartition, error)) {
	s := &scanner{rest: body, budget: MaxDecompressedResponse}
	defer s.close()
	if version >= 1 {
		s.skip(4) // throttle time
	}
	if version >= 7 {
		s.skip(6) // error code, session id
	}
	for range s.count() {
		topic := s.str()
		for range s.count() {
			partition := int32(s.u32())
			s.skip(2 + 8) // error code, high watermark
			if version >= 4 {
				s.skip(8) // last stable offset
			}
			if version >= 5 {
				s.skip(8) // log start offset
			}
			if version >= 4 {
				if n := s.count(); n > 0 {
					s.skip(16 * n) // aborted transactions
				}
			}
			if version >= 11 {
				s.skip(4) // preferred read replica
			}
			records := s.bytes()
			if s.bad {
				return
			}
			if err := s.records(records); err != nil {
				s.first[0] |= codecInvalid
				refused(kafka.TopicPartition{Topic: topic, Partition: partition}, err)
				return
			}
		}
	}
}

// scanner walks a Fetch response; bad is set once it ran off its end.
type scanner struct {
	rest   []byte
	bad    bool
	budget int64 // decompressed bytes left
	// first is the attributes byte of the response's first compressed
	// batch or message.
	first []byte
	gz    *gzip.Reader
	zs    *zstd.Decoder
	lz    *lz4.Reader
}

func (s *scanner) take(n int) []byte {
	if s.bad || n < 0 || n > len(s.rest) {
		s.bad = true
		return nil
	}
	b := s.rest[:n:n]
	s.rest = s.rest[n:]
	return b
}

func (s *scanner) skip(n int) { s.take(n) }

func (s *scanner) u32() uint32 {
	if b := s.take(4); b != nil {
		return binary.BigEndian.Uint32(b)
	}
	return 0
}

// count is an array's length; a null or impossible one walks nothing.
func (s *scanner) count() int {
	n := int32(s.u32())
	if n < 0 || int(n) > len(s.rest) {
		return 0
	}
	return int(n)
}

func (s *scanner) str() string {
	b := s.take(2)
	if b == nil {
		return ""
	}
	return string(s.take(int(binary.BigEndian.Uint16(b))))
}

func (s *scanner) bytes() []byte {
	n := int32(s.u32())
	if n < 0 {
		return nil
	}
	return s.take(int(n))
}

// records checks one partition's records: batches of the v2 format and
// entries of the old ones, in any mix, the last possibly cut off.
func (s *scanner) records(b []byte) error {
	for len(b) >= 17 {
		size := int(int32(binary.BigEndian.Uint32(b[8:12])))
		if size < 5 || 12+size > len(b) {
			return nil // cut off by the size limits: sarama drops it
		}
		entry := b[12 : 12+size]
		b = b[12+size:]
		var err error
		switch magic := entry[4]; {
		case magic == 2 && len(entry) >= 49:
			// partition leader epoch, magic, CRC, then the attributes.
			if codec := entry[10] & 0x07; codec != 0 {
				s.compressed(entry[10:11])
				_, err = s.inflate(codec, entry[49:], false)
			}
		case magic < 2:
			err = s.legacy(entry)
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// legacy checks an old-format message: CRC, magic, attributes, a timestamp
// from magic 1 on, key and value. A compressed one's value is a message set
// whose messages must not be compressed again.
func (s *scanner) legacy(msg []byte) error {
	at := 6
	if msg[4] == 1 {
		at += 8
	}
	codec := msg[5] & 0x07
	if codec == 0 {
		return nil
	}
	s.compressed(msg[5:6])
	value, ok := legacyValue(msg, at)
	if !ok {
		return nil // sarama judges what does not parse
	}
	set, err := s.inflate(codec, value, true)
	if err == nil && nestsCompression(set) {
		err = errNestedCompression
	}
	return err
}

// compressed notes a compressed batch's attributes byte.
func (s *scanner) compressed(attributes []byte) {
	if s.first == nil {
		s.first = attributes
	}
}

// legacyValue is the value of an old-format message whose key starts at at.
func legacyValue(msg []byte, at int) ([]byte, bool) {
	for range 2 { // the key, then the value
		if at+4 > len(msg) {
			return nil, false
		}
		n := int(int32(binary.BigEndian.Uint32(msg[at:])))
		at += 4
		if n < 0 {
			n = 0
		}
		if at+n > len(msg) {
			return nil, false
		}
		if at += n; at == len(msg) {
			return msg[at-n : at], true
		}
	}
	return nil, false
}

// nestsCompression tells whether an old-format message set holds a
// compressed message.
func nestsCompression(set []byte) bool {
	for len(set) >= 18 {
		size := int(int32(binary.BigEndian.Uint32(set[8:12])))
		if size < 6 || 12+size > len(set) {
			return false
		}
		msg := set[12 : 12+size]
		if msg[4] < 2 && msg[5]&0x07 != 0 {
			return true
		}
		set = set[12+size:]
	}
	return false
}

// inflate decompresses data with codec, counting its bytes against the
// budget, and returns them when keep is set.
func (s *scanner) inflate(codec byte, data []byte, keep bool) ([]byte, error) {
	var r io.Reader
	var err error
	switch codec {
	case 1:
		if s.gz == nil {
			s.gz, err = gzip.NewReader(bytes.NewReader(data))
		} else {
			err = s.gz.Reset(bytes.NewReader(data))
		}
		r = s.gz
	case 2:
		return s.inflateSnappy(data, keep)
	case 3:
		if s.lz == nil {
			s.lz = lz4.NewReader(nil)
		}
		s.lz.Reset(bytes.NewReader(data))
		r = s.lz
	case 4:
		if s.zs == nil {
			s.zs, err = zstd.NewReader(nil, zstd.WithDecoderConcurrency(1), zstd.WithDecoderLowmem(true), zstd.WithDecoderMaxMemory(MaxDecompressedResponse))
		}
		if err == nil {
			err = s.zs.Reset(bytes.NewReader(data))
		}
		r = s.zs
	default:
		return nil, nil // sarama refuses an unknown codec itself
	}
	if err != nil {
		return nil, nil // sarama judges what does not decompress
	}
	limited := io.LimitReader(r, s.budget+1)
	var out []byte
	var n int64
	if keep {
		out, err = io.ReadAll(limited)
		n = int64(len(out))
	} else {
		n, err = io.Copy(io.Discard, limited)
	}
	if n > s.budget {
		return nil, s.overBudget()
	}
	s.budget -= n
	if err != nil {
		return nil, nil
	}
	return out, nil
}

// inflateSnappy counts snappy data (plain, or in xerial's framing) by the
// lengths its blocks declare, which decoding checks.
func (s *scanner) inflateSnappy(data []byte, keep bool) ([]byte, error) {
	var n int64
	if blocks, ok := xerialBlocks(data); ok {
		for _, b := range blocks {
			l, err := s2.DecodedLen(b)
			if err != nil {
				return nil, nil
			}
			n += int64(l)
		}
	} else if l, err := s2.DecodedLen(data); err == nil {
		n = int64(l)
	}
	if n > s.budget {
		return nil, s.overBudget()
	}
	s.budget -= n
	if !keep {
		return nil, nil
	}
	out, err := xerial.Decode(data)
	if err != nil {
		return nil, nil
	}
	return out, nil
}

// xerialBlocks splits snappy data in xerial's framing into its blocks.
func xerialBlocks(data []byte) ([][]byte, bool) {
	if len(data) < 16 || !bytes.Equal(data[:8], []byte{0x82, 'S', 'N', 'A', 'P', 'P', 'Y', 0}) {
		return nil, false
	}
	var blocks [][]byte
	for pos := 16; pos+4 <= len(data); {
		size := int(binary.BigEndian.Uint32(data[pos:]))
		pos += 4
		if size < 0 || pos+size > len(data) {
			return blocks, true
		}
		blocks = append(blocks, data[pos:pos+size])
		pos += size
	}
	return blocks, true
}

func (s *scanner) overBudget() error {
	s.budget = 0
	return fmt.Errorf("its batches decompress to more than %d MiB in one response", MaxDecompressedResponse>>20)
}

func (s *scanner) close() {
	if s.zs != nil {
		s.zs.Close()
	}
}
