// Package configcheck holds the accepted range of every number and
// duration key of the receiver's configuration and checks values against
// them, and the shape of a broker address. Its errors name the key as the
// collector does (outer::inner) and, for a duration far below its floor,
// say that a number without a unit is read as nanoseconds.
package configcheck

import (
	"fmt"
	"strings"
	"time"
)

// Duration is the range of a duration key.
type Duration struct {
	// Key names the key as the collector does: metadata::refresh_interval.
	Key      string
	Min, Max time.Duration // Max 0: no ceiling
	// Zero, when set, says what 0 means; 0 is then accepted besides the range.
	Zero string
}

// Check returns an error naming the key when got is outside the range.
func (d Duration) Check(got time.Duration) error {
	if (got == 0 && d.Zero != "") || (got >= d.Min && (d.Max == 0 || got <= d.Max)) {
		return nil
	}
	// A YAML number without a unit decodes to that many nanoseconds: below a
	// millisecond it is what was written, not what was meant.
	if got > 0 && got < time.Millisecond && got < d.Min {
		n := int64(got)
		if unit := d.unitFor(n); unit != "" {
			return fmt.Errorf("%s: %d was read as %s; write %d%s (a duration without a unit is in nanoseconds; %s)", d.Key, n, got, n, unit, d.Range())
		}
		return fmt.Errorf("%s: %d was read as %s; write it with a unit, such as s or m (a duration without a unit is in nanoseconds; %s)", d.Key, n, got, d.Range())
	}
	return fmt.Errorf("%s: must be %s, got %s", d.Key, d.Range(), Short(got))
}

// unitFor returns the first unit that puts n of it in range, or "".
func (d Duration) unitFor(n int64) string {
	for _, u := range []struct {
		name string
		size time.Duration
	}{{"s", time.Second}, {"ms", time.Millisecond}, {"m", time.Minute}, {"h", time.Hour}} {
		v := time.Duration(n) * u.size
		if v/u.size == time.Duration(n) && d.Check(v) == nil {
			return u.name
		}
	}
	return ""
}

// Range says what the key accepts, as docs/configuration.md does.
func (d Duration) Range() string {
	r := "at least " + Short(d.Min)
	if d.Max != 0 {
		r = fmt.Sprintf("between %s and %s", Short(d.Min), Short(d.Max))
	}
	if d.Zero != "" {
		r = fmt.Sprintf("0 (%s) or %s", d.Zero, r)
	}
	return r
}

// Int is the range of a whole-number key.
type Int struct {
	Key      string
	Min, Max int64 // Max 0: no ceiling
	// Or, when OrMeans is set, is one more value accepted besides the range.
	Or      int64
	OrMeans string
}

// Check returns an error naming the key when got is outside the range.
func (i Int) Check(got int64) error {
	if (i.OrMeans != "" && got == i.Or) || (got >= i.Min && (i.Max == 0 || got <= i.Max)) {
		return nil
	}
	return fmt.Errorf("%s: must be %s, got %d", i.Key, i.Range(), got)
}

// Range says what the key accepts, as docs/configuration.md does.
func (i Int) Range() string {
	r := fmt.Sprintf("at least %d", i.Min)
	if i.Max != 0 {
		r = fmt.Sprintf("between %d and %d", i.Min, i.Max)
	}
	if i.OrMeans != "" {
		r = fmt.Sprintf("%d (%s) or %s", i.Or, i.OrMeans, r)
	}
	return r
}

// Short writes a duration as a user would: 1h, 10m, 1m30s, 100ms.
func Short(d time.Duration) string {
	s := d.String()
	if strings.HasSuffix(s, "m0s") {
		s = strings.TrimSuffix(s, "0s")
	}
	if strings.HasSuffix(s, "h0m") {
		s = strings.TrimSuffix(s, "0m")
	}
	return s
}
