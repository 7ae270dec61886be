package oplog

import (
	"sync"
	"time"
)

// DefaultSampleInterval is the default interval of a Sampler: one minute.
const DefaultSampleInterval = time.Minute

// MaxSampleKeys bounds the keys one Sampler tracks, and so its memory and
// the entries it admits in one interval. While it tracks MaxSampleKeys keys
// seen within the interval, an entry of a key it does not track is not
// admitted.
const MaxSampleKeys = 4096

// SampleKey names the entries a Sampler counts together.
type SampleKey struct {
	EnvironmentID  int64
	IntegrationKey string
	// Operation is the entries' Operation, such as "incoming" or
	// "delivery".
	Operation string
	// Outcome tells apart the entries of one operation: a refusal's
	// reason, "accepted", "delivered", "retrying", ...
	Outcome string
}

// Sampler bounds the log entries that requests nobody authenticated can
// make a process write: it admits at most one entry per key in each
// interval, and the entry it admits says how many of its key were left out
// since the one before (its meta "suppressed"). Whatever the rate of the
// requests, a key then writes at most one entry per interval: over a
// retention period R, at most R/interval + 1 entries per key, per process
// (each process samples on its own). It is safe for concurrent use.
type Sampler struct {
	interval time.Duration
	mu       sync.Mutex
	seen     map[SampleKey]*sampleCount
}

type sampleCount struct {
	at         time.Time
	suppressed int
}

// NewSampler returns a Sampler that admits one entry per key in each
// interval; an interval of 0 or less means DefaultSampleInterval.
func NewSampler(interval time.Duration) *Sampler {
	if interval <= 0 {
		interval = DefaultSampleInterval
	}
	return &Sampler{interval: interval, seen: map[SampleKey]*sampleCount{}}
}

// Interval returns the Sampler's interval.
func (s *Sampler) Interval() time.Duration { return s.interval }

// Admit reports whether an entry of key k, made at now, may be written and,
// when it may, how many entries of k were not admitted since the last one
// that was (to record as the entry's meta "suppressed"). An entry is
// admitted when none of its key was within the interval before now.
// Entries left out after the last admitted one of a key are counted by the
// next admitted one, if any.
func (s *Sampler) Admit(k SampleKey, now time.Time) (ok bool, suppressed int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if c, ok := s.seen[k]; ok {
		if now.Sub(c.at) < s.interval {
			c.suppressed++
			return false, 0
		}
		n := c.suppressed
		c.at, c.suppressed = now, 0
		return true, n
	}
	if len(s.seen) >= MaxSampleKeys {
		// Forget the keys whose interval has passed: a key forgotten and
		// seen again is admitted no sooner than it would have been (the
		// count of its entries left out since its last one is lost).
		for key, c := range s.seen {
			if now.Sub(c.at) >= s.interval {
				delete(s.seen, key)
			}
		}
		if len(s.seen) >= MaxSampleKeys {
			return false, 0
		}
	}
	s.seen[k] = &sampleCount{at: now}
	return true, 0
}
