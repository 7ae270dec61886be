package functions

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/embedauth/connect/store"
)

func TestParseFrequency(t *testing.T) {
	t.Parallel()
	day := 24 * time.Hour
	for _, tc := range []struct {
		in   string
		want time.Duration
		norm string
	}{
		{"every half day", 12 * time.Hour, "12h"},
		{"every half hour", 30 * time.Minute, "30m"},
		{"every quarter hour", 15 * time.Minute, "15m"},
		{"every hour", time.Hour, "1h"},
		{"every day", day, "1d"},
		{"every week", 7 * day, "7d"},
		{"every month", 30 * day, "30d"},
		{"half hour", 30 * time.Minute, "30m"},
		{"every 5 minutes", 5 * time.Minute, "5m"},
		{"every 2 days", 2 * day, "2d"},
		{"every 2 hours", 2 * time.Hour, "2h"},
		{"every 12 hrs", 12 * time.Hour, "12h"},
		{"every 30 secs", 30 * time.Second, "30s"},
		{"every 45 seconds", 45 * time.Second, "45s"},
		{"every 1 minute", time.Minute, "1m"},
		{"every hours", time.Hour, "1h"},
		{"every d", day, "1d"},
		{"every 2 weeks", 14 * day, "14d"},
		{"every 2 months", 60 * day, "60d"},
		{"1h", time.Hour, "1h"},
		{"30m", 30 * time.Minute, "30m"},
		{"90s", 90 * time.Second, "90s"},
		{"120s", 2 * time.Minute, "2m"},
		{"30s", 30 * time.Second, "30s"},
		{"1.5h", 90 * time.Minute, "90m"},
		{".5d", 12 * time.Hour, "12h"},
		{"1.1h", 66 * time.Minute, "66m"},
		{"2 hrs", 2 * time.Hour, "2h"},
		{"1d", day, "1d"},
		{"24h", day, "1d"},
		{"1w", 7 * day, "7d"},
		{"365d", 365 * day, "365d"},
		{"60000", time.Minute, "1m"},
		{"60000ms", time.Minute, "1m"},
		{"  Every   5   Minutes  ", 5 * time.Minute, "5m"},
		{"EVERY HOUR", time.Hour, "1h"},
		{"5Minutes", 5 * time.Minute, "5m"},
		{"0005m", 5 * time.Minute, "5m"},
	} {
		f, err := ParseFrequency(tc.in)
		if err != nil {
			t.Errorf("ParseFrequency(%q): %v", tc.in, err)
			continue
		}
		if f.Interval != tc.want || f.Normalized != tc.norm || f.String() != tc.norm {
			t.Errorf("ParseFrequency(%q) = %v %q, want %v %q", tc.in, f.Interval, f.Normalized, tc.want, tc.norm)
		}
		again, err := ParseFrequency(f.Normalized)
		if err != nil || again != f {
			t.Errorf("ParseFrequency(%q) (normalised from %q) = %+v, %v; want %+v", f.Normalized, tc.in, again, err, f)
		}
	}
}

func TestParseFrequencyErrors(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		in, code, says string
	}{
		{"", CodeInvalidFrequency, "empty"},
		{"   ", CodeInvalidFrequency, "empty"},
		{"every", CodeInvalidFrequency, `unknown unit "every"`},
		{"every fortnight", CodeInvalidFrequency, `unknown unit "fortnight"`},
		{"soon", CodeInvalidFrequency, "unknown unit"},
		{"every 5 parsecs", CodeInvalidFrequency, `unknown unit "parsecs"`},
		{"-1h", CodeInvalidFrequency, "unknown unit"},
		{"+1h", CodeInvalidFrequency, "unknown unit"},
		{"1e3s", CodeInvalidFrequency, "unknown unit"},
		{"1..5h", CodeInvalidFrequency, "not a number"},
		{"5.h", CodeInvalidFrequency, "not a number"},
		{"1.2.3h", CodeInvalidFrequency, "not a number"},
		{"every 5 5 minutes", CodeInvalidFrequency, "unknown unit"},
		{"1h30m", CodeInvalidFrequency, "unknown unit"},
		{"every half", CodeInvalidFrequency, "unknown unit"},
		{"30500ms", CodeInvalidFrequency, "whole number of seconds"},
		{"0.3333h", CodeInvalidFrequency, "whole number of seconds"},
		{"366d", CodeInvalidFrequency, "365 days"},
		{"1y", CodeInvalidFrequency, "365 days"},
		{"every 2 years", CodeInvalidFrequency, "365 days"},
		{"99999999999999999999999999999999999999999999999999 days", CodeInvalidFrequency, "365 days"},
		{strings.Repeat("1", 101), CodeInvalidFrequency, "longer than 100 characters"},
		{strings.Repeat(" ", 1000) + "1h", CodeInvalidFrequency, "longer than 100 characters"},
		{"10s", CodeSyncIntervalTooShort, "shorter than the minimum of 30 seconds"},
		{"29s", CodeSyncIntervalTooShort, "30 seconds"},
		{"29999ms", CodeSyncIntervalTooShort, "30 seconds"},
		{"every minute", "", ""}, // 1m is fine
		{"every second", CodeSyncIntervalTooShort, "30 seconds"},
		{"0", CodeSyncIntervalTooShort, "30 seconds"},
		{"0s", CodeSyncIntervalTooShort, "30 seconds"},
		{"500", CodeSyncIntervalTooShort, "30 seconds"},
		{"ms", CodeSyncIntervalTooShort, "30 seconds"},
	} {
		_, err := ParseFrequency(tc.in)
		if tc.code == "" {
			if err != nil {
				t.Errorf("ParseFrequency(%q): %v", tc.in, err)
			}
			continue
		}
		var fe *FrequencyError
		if !errors.As(err, &fe) {
			t.Errorf("ParseFrequency(%q) = %v, want a *FrequencyError", tc.in, err)
			continue
		}
		if fe.Code != tc.code || !strings.Contains(fe.Message, tc.says) {
			t.Errorf("ParseFrequency(%q) = %q %q, want code %q and a message saying %q", tc.in, fe.Code, fe.Message, tc.code, tc.says)
		}
		if !strings.HasPrefix(err.Error(), tc.code+": ") {
			t.Errorf("ParseFrequency(%q).Error() = %q, want it to start with the code", tc.in, err)
		}
		if !errors.Is(err, store.ErrInvalid) {
			t.Errorf("ParseFrequency(%q): errors.Is(err, store.ErrInvalid) = false", tc.in)
		}
	}
}

func FuzzParseFrequency(f *testing.F) {
	for _, s := range []string{"every half day", "every 5 minutes", "1.5h", "30s", ".5d", "60000", "every hours",
		"365d", "1y", "29s", "1..5h", "every", "EVERY 2 WEEKS", "0.0000001d", "every month"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		fr, err := ParseFrequency(s)
		if err != nil {
			var fe *FrequencyError
			if !errors.As(err, &fe) || (fe.Code != CodeInvalidFrequency && fe.Code != CodeSyncIntervalTooShort) {
				t.Fatalf("ParseFrequency(%q) = %v, want a *FrequencyError with a known code", s, err)
			}
			return
		}
		if fr.Interval < MinFrequency || fr.Interval > MaxFrequency || fr.Interval%time.Second != 0 {
			t.Fatalf("ParseFrequency(%q) = %v: out of bounds", s, fr.Interval)
		}
		again, err := ParseFrequency(fr.Normalized)
		if err != nil || again != fr {
			t.Fatalf("ParseFrequency(%q) = %+v; its normalised form parses to %+v, %v", s, fr, again, err)
		}
	})
}
