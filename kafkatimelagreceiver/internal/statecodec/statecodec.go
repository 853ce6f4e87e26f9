// Package statecodec reads the receiver's stored state encodings (the
// interpolation tables', the stuck clocks'): varints and length-prefixed
// fields, remembering the first failure so that a decoder reads straight
// through and checks once per field group; and it writes and checks the
// checksums that tell state damaged in storage from state as saved.
package statecodec

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"math"
)

// ErrCorrupt is wrapped by every error of a Reader: the state is damaged,
// or was not written by its encoder.
var ErrCorrupt = errors.New("stored state is corrupt")

// ErrDamaged says that bytes do not match the checksum saved with them:
// they were damaged in storage.
var ErrDamaged = errors.New("checksum mismatch: damaged in storage")

// ChecksumLen is how many bytes a checksum takes.
const ChecksumLen = 4

// castagnoli is CRC-32C's table: it detects every burst of up to 32 bits
// and every error of up to 3 bits in a message of up to 256 MiB, misses
// other damage once in 2^32, and Go computes it with the processor's CRC32
// instruction where there is one.
var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// AppendChecksum appends the CRC-32C of b[from:] to b, little-endian.
func AppendChecksum(b []byte, from int) []byte {
	return binary.LittleEndian.AppendUint32(b, crc32.Checksum(b[from:], castagnoli))
}

// Matches tells whether sum, ChecksumLen bytes, is the checksum of the
// parts one after the other.
func Matches(sum []byte, parts ...[]byte) bool {
	var crc uint32
	for _, p := range parts {
		crc = crc32.Update(crc, castagnoli, p)
	}
	return len(sum) == ChecksumLen && binary.LittleEndian.Uint32(sum) == crc
}

// Reader decodes one encoded state.
type Reader struct {
	data []byte
	r    *bytes.Reader
	err  error
}

// NewReader reads b.
func NewReader(b []byte) *Reader { return &Reader{data: b, r: bytes.NewReader(b)} }

// Pos is how many bytes were read.
func (d *Reader) Pos() int { return len(d.data) - d.r.Len() }

// Checksum reads a checksum (AppendChecksum) and tells whether it is that of
// the bytes read from pos (a Pos) on. Where the checksum should be, or
// earlier, a failure to read is left in Err, and the checksum does not
// match.
func (d *Reader) Checksum(pos int) bool {
	end := d.Pos()
	sum := d.Bytes(ChecksumLen)
	if d.err != nil || pos < 0 || pos > end {
		return false
	}
	return Matches(sum, d.data[pos:end])
}

// Rest is the bytes not read yet, which it leaves unread.
func (d *Reader) Rest() []byte { return d.data[d.Pos():] }

// Err is the first failure, nil while there was none.
func (d *Reader) Err() error { return d.err }

// OK tells whether nothing failed yet.
func (d *Reader) OK() bool { return d.err == nil }

// Len is how many bytes are left.
func (d *Reader) Len() int { return d.r.Len() }

// Uvarint reads an unsigned varint.
func (d *Reader) Uvarint() uint64 { return d.Bounded(math.MaxUint64, "varint") }

// Varint reads a signed varint.
func (d *Reader) Varint() int64 {
	if d.err != nil {
		return 0
	}
	v, err := binary.ReadVarint(d.r)
	if err != nil {
		d.err = fmt.Errorf("%w: %w", ErrCorrupt, err)
		return 0
	}
	return v
}

// Bounded reads an unsigned varint of at most limit; what names it in the
// error.
func (d *Reader) Bounded(limit uint64, what string) uint64 {
	if d.err != nil {
		return 0
	}
	v, err := binary.ReadUvarint(d.r)
	switch {
	case err != nil:
		// ReadUvarint returns what it read so far with the error: that
		// must not drive a loop.
		d.err = fmt.Errorf("%w: %s: %w", ErrCorrupt, what, err)
		return 0
	case v > limit:
		d.err = fmt.Errorf("%w: %s %d is out of range", ErrCorrupt, what, v)
		return 0
	}
	return v
}

// Count reads a count of items that take at least minBytes each: a count
// the rest of the input cannot hold is corrupt, and must not drive an
// allocation.
func (d *Reader) Count(minBytes int, what string) int {
	return int(d.Bounded(uint64(d.r.Len()/minBytes), what))
}

// Name reads a non-empty length-prefixed string.
func (d *Reader) Name(what string) string {
	n := d.Bounded(uint64(d.r.Len()), what+" length")
	if d.err == nil && n == 0 {
		d.Fail("empty %s", what)
	}
	if d.err != nil {
		return ""
	}
	return string(d.Bytes(n))
}

// Bytes reads n bytes.
func (d *Reader) Bytes(n uint64) []byte {
	if d.err != nil {
		return nil
	}
	if n > uint64(d.r.Len()) {
		d.Fail("%d bytes wanted, %d left", n, d.r.Len())
		return nil
	}
	out := make([]byte, n)
	_, _ = d.r.Read(out)
	return out
}

// Fail records a failure, unless one came first.
func (d *Reader) Fail(format string, args ...any) {
	if d.err == nil {
		d.err = fmt.Errorf("%w: "+format, append([]any{ErrCorrupt}, args...)...)
	}
}
