package clientsettings

import (
	"cmp"
	"fmt"
	"slices"
	"strconv"
	"strings"
)

// Version is a Kafka protocol version's components: major.minor.patch, or
// 0.major.minor.patch for the releases before 1.0.
type Version []int

// ParseVersion reads a protocol version in any spelling configkafka
// accepts ("3.7.0", "3.7", "v3.7", "0.10.2", "0.10.2.1"), and only those:
// the ones sarama's client reads (saramaconfig's test holds them to it).
func ParseVersion(v string) (Version, error) {
	s := strings.TrimPrefix(strings.TrimSpace(v), "v")
	fields := strings.Split(s, ".")
	want := 3 // major.minor.patch
	if fields[0] == "0" {
		want = 4 // 0.major.minor.patch
	}
	if len(fields) == want-1 {
		fields = append(fields, "0")
	}
	if len(fields) != want {
		return nil, fmt.Errorf("invalid version `%s`", v)
	}
	out := make(Version, len(fields))
	for i, f := range fields {
		n, err := strconv.Atoi(f)
		if err != nil || strings.Trim(f, "0123456789") != "" || (i == 0 && want == 3 && f[0] == '0') {
			return nil, fmt.Errorf("invalid version `%s`", v)
		}
		out[i] = n
	}
	return out, nil
}

// String is the version with every component, as sarama spells it.
func (v Version) String() string {
	parts := make([]string, len(v))
	for i, n := range v {
		parts[i] = strconv.Itoa(n)
	}
	return strings.Join(parts, ".")
}

// AtLeast tells whether v is min or later.
func (v Version) AtLeast(min Version) bool {
	return slices.CompareFunc(v.padded(), min.padded(), cmp.Compare[int]) >= 0
}

// padded is the version as four components, 0.major.minor.patch or
// major.minor.patch.0, which compare in order.
func (v Version) padded() []int {
	if len(v) == 4 {
		return v
	}
	return append(slices.Clone(v), 0)
}

// VersionAtLeast tells whether the protocol version v is min or later; a
// version that cannot be parsed is not.
func VersionAtLeast(v, min string) bool {
	have, err := ParseVersion(v)
	if err != nil {
		return false
	}
	want, err := ParseVersion(min)
	return err == nil && have.AtLeast(want)
}
