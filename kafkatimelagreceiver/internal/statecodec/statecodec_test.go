package statecodec_test

import (
	"encoding/binary"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/otelcol-kafkatimelag/otelcol-kafkatimelag/kafkatimelagreceiver/internal/statecodec"
)

// A checksum covers exactly the bytes read since the position it is
// given: a flip in any of them, or in the checksum, fails it; bytes read
// before that position do not count.
func TestChecksumCoversTheBytesSincePos(t *testing.T) {
	data := binary.AppendUvarint([]byte{0xff}, 300)
	data = append(data, "orders"...)
	data = statecodec.AppendChecksum(data, 1)
	require.Len(t, data, 1+2+6+statecodec.ChecksumLen)

	read := func(b []byte) (uint64, bool, error) {
		d := statecodec.NewReader(b)
		d.Bytes(1)
		from := d.Pos()
		n := d.Uvarint()
		d.Bytes(6)
		ok := d.Checksum(from)
		return n, ok, d.Err()
	}
	n, ok, err := read(data)
	require.NoError(t, err)
	require.True(t, ok)
	require.Equal(t, uint64(300), n)
	for bit := range 8 * len(data) {
		damaged := append([]byte(nil), data...)
		damaged[bit/8] ^= 1 << (bit % 8)
		_, ok, _ := read(damaged)
		require.Equal(t, bit < 8, ok, "bit %d", bit)
	}
	_, ok, err = read(data[:len(data)-1])
	require.False(t, ok, "a checksum cut short")
	require.ErrorIs(t, err, statecodec.ErrCorrupt)
}
