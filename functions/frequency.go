package functions

import (
	"fmt"
	"math/big"
	"strconv"
	"strings"
	"time"

	"github.com/embedauth/connect/store"
)

// The codes of a FrequencyError.
const (
	// CodeInvalidFrequency is a frequency that does not parse, or is not
	// a whole number of seconds, or is longer than MaxFrequency.
	CodeInvalidFrequency = "invalid_frequency"
	// CodeSyncIntervalTooShort is a frequency shorter than MinFrequency.
	CodeSyncIntervalTooShort = "sync_interval_too_short"
)

// The bounds of a sync's frequency.
const (
	// MinFrequency is the shortest interval between two runs of a sync.
	MinFrequency = 30 * time.Second
	// MaxFrequency is the longest: 365 days. Nango documents 31 days
	// but enforces nothing; a longer interval is more likely a typo.
	MaxFrequency = 365 * 24 * time.Hour
)

// maxFrequencyText bounds the text ParseFrequency reads, as vercel/ms
// does (100 characters).
const maxFrequencyText = 100

// Frequency is how often a sync runs: a parsed frequency.
type Frequency struct {
	// Interval is the time between two runs: a whole number of seconds
	// from MinFrequency to MaxFrequency.
	Interval time.Duration
	// Normalized is the interval in the compact form of vercel/ms with
	// the largest unit that divides it exactly: "30s", "90s", "5m", "1h",
	// "12h", "1d", "7d", "30d". ParseFrequency reads it back to the same
	// Interval. It is what APIs answer (GET /sync/status' frequency,
	// PUT /sync/update-connection-frequency).
	Normalized string
}

// String returns f.Normalized.
func (f Frequency) String() string { return f.Normalized }

// FrequencyError is a frequency that ParseFrequency refuses.
type FrequencyError struct {
	// Code is CodeInvalidFrequency or CodeSyncIntervalTooShort.
	Code string
	// Message says what is wrong, quoting the input.
	Message string
}

// Error returns the code and the message: "sync_interval_too_short: ...".
func (e *FrequencyError) Error() string { return e.Code + ": " + e.Message }

// Is reports that a FrequencyError is an invalid input: errors.Is(err,
// store.ErrInvalid) holds.
func (e *FrequencyError) Is(target error) bool { return target == store.ErrInvalid }

// frequencyPhrases are Nango's named frequencies, after "every".
var frequencyPhrases = map[string]string{
	"half day":     "12h",
	"half hour":    "30m",
	"quarter hour": "15m",
	"hour":         "1h",
	"day":          "1d",
	"week":         "7d",
	"month":        "30d",
}

// frequencyUnits are the units of a duration, in milliseconds: those of
// vercel/ms, plus month and months (30 days, as "every month").
var frequencyUnits = map[string]int64{
	"ms": 1, "msec": 1, "msecs": 1, "millisecond": 1, "milliseconds": 1,
	"s": 1000, "sec": 1000, "secs": 1000, "second": 1000, "seconds": 1000,
	"m": 60e3, "min": 60e3, "mins": 60e3, "minute": 60e3, "minutes": 60e3,
	"h": 3600e3, "hr": 3600e3, "hrs": 3600e3, "hour": 3600e3, "hours": 3600e3,
	"d": 86400e3, "day": 86400e3, "days": 86400e3,
	"w": 7 * 86400e3, "week": 7 * 86400e3, "weeks": 7 * 86400e3,
	"month": 30 * 86400e3, "months": 30 * 86400e3,
	// A year is 365.25 days for vercel/ms, longer than MaxFrequency: it
	// parses only to be refused with a clear message.
	"y": 31557600e3, "yr": 31557600e3, "yrs": 31557600e3, "year": 31557600e3, "years": 31557600e3,
}

// ParseFrequency reads a sync's frequency in Nango's notation, shared by
// sync definitions and the per-connection override:
//
//   - "every half day", "every half hour", "every quarter hour", "every
//     hour", "every day", "every week", "every month" (30 days);
//   - "every <duration>" or a bare duration, where a duration is a
//     number and a unit as vercel/ms reads them: "5 minutes", "2 days",
//     "1h", "30m", "90s", "1.5h", ".5d", "2 hrs", "10 secs", "1d", "2w";
//     a number without unit counts milliseconds ("60000");
//   - a unit without number counts one ("every 2 hours", "every hours").
//
// Units: ms, msec(s), millisecond(s); s, sec(s), second(s); m, min(s),
// minute(s); h, hr(s), hour(s); d, day(s); w, week(s); month(s) (30 days);
// y, yr(s), year(s) (365.25 days). Case does not matter, nor spaces around
// the text, between words or between the number and its unit (at most
// one). Signs and exponents are refused.
//
// The result must be a whole number of seconds from MinFrequency (30 s;
// shorter is refused with CodeSyncIntervalTooShort) to MaxFrequency (365
// days). Every error is a *FrequencyError.
func ParseFrequency(s string) (Frequency, error) {
	invalid := func(format string, args ...any) (Frequency, error) {
		return Frequency{}, &FrequencyError{Code: CodeInvalidFrequency, Message: fmt.Sprintf(format, args...)}
	}
	if len(s) > 4*maxFrequencyText { // spaces around it included
		return invalid("the frequency is longer than %d characters", maxFrequencyText)
	}
	text := strings.Join(strings.Fields(strings.ToLower(s)), " ")
	switch {
	case text == "":
		return invalid("the frequency is empty (want a duration such as \"every hour\" or \"30m\")")
	case len(text) > maxFrequencyText:
		return invalid("the frequency is longer than %d characters", maxFrequencyText)
	}
	rest := text
	if r, ok := strings.CutPrefix(rest, "every "); ok {
		rest = r
	}
	if p, ok := frequencyPhrases[rest]; ok {
		rest = p
	}

	// A number (digits, at most one '.', a digit last), an optional
	// space, an optional unit.
	i := 0
	for i < len(rest) && (frequencyDigit(rest[i]) || rest[i] == '.') {
		i++
	}
	num, unit := rest[:i], strings.TrimPrefix(rest[i:], " ")
	if num == "" && unit == "" {
		return invalid("%q is not a frequency (want a duration such as \"every hour\" or \"30m\")", s)
	}
	amount := big.NewRat(1, 1)
	if num != "" {
		if strings.Count(num, ".") > 1 || !frequencyDigit(num[len(num)-1]) {
			return invalid("%q is not a frequency: %q is not a number", s, num)
		}
		if _, ok := amount.SetString("0" + num); !ok {
			return invalid("%q is not a frequency: %q is not a number", s, num)
		}
	}
	perUnit := int64(1) // a bare number counts milliseconds
	if unit != "" {
		u, ok := frequencyUnits[unit]
		if !ok {
			return invalid("%q is not a frequency: unknown unit %q (want s, m, h, d or w, or their names)", s, unit)
		}
		perUnit = u
	}

	millis := amount.Mul(amount, big.NewRat(perUnit, 1))
	switch {
	case millis.Cmp(big.NewRat(MinFrequency.Milliseconds(), 1)) < 0:
		return Frequency{}, &FrequencyError{Code: CodeSyncIntervalTooShort,
			Message: fmt.Sprintf("the frequency %q is shorter than the minimum of 30 seconds", s)}
	case millis.Cmp(big.NewRat(MaxFrequency.Milliseconds(), 1)) > 0:
		return invalid("the frequency %q is longer than the maximum of 365 days", s)
	}
	seconds := new(big.Rat).Quo(millis, big.NewRat(1000, 1))
	if !seconds.IsInt() {
		return invalid("the frequency %q is not a whole number of seconds", s)
	}
	d := time.Duration(seconds.Num().Int64()) * time.Second // at most 365 days: no overflow
	return Frequency{Interval: d, Normalized: formatInterval(d)}, nil
}

func frequencyDigit(c byte) bool { return '0' <= c && c <= '9' }

// formatInterval writes a whole number of seconds with the largest unit
// that divides it: d, h, m or s.
func formatInterval(d time.Duration) string {
	sec := int64(d / time.Second)
	for _, u := range []struct {
		n    int64
		unit string
	}{{86400, "d"}, {3600, "h"}, {60, "m"}} {
		if sec%u.n == 0 {
			return strconv.FormatInt(sec/u.n, 10) + u.unit
		}
	}
	return strconv.FormatInt(sec, 10) + "s"
}
