package oplog_test

import (
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/embedauth/connect/oplog"
)

var t0 = time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC)

// TestSamplerOnePerKeyAndInterval: a key gets one entry per interval, the
// next one counting those left out; keys are counted apart.
func TestSamplerOnePerKeyAndInterval(t *testing.T) {
	t.Parallel()
	s := oplog.NewSampler(time.Minute)
	if s.Interval() != time.Minute {
		t.Fatalf("interval %s", s.Interval())
	}
	a := oplog.SampleKey{EnvironmentID: 1, IntegrationKey: "notion", Operation: "incoming", Outcome: "accepted"}
	b := a
	b.Outcome = "storage_full"
	c := a
	c.EnvironmentID = 2
	admit := func(k oplog.SampleKey, at time.Time, want bool, wantN int) {
		t.Helper()
		ok, n := s.Admit(k, at)
		if ok != want || n != wantN {
			t.Fatalf("Admit(%+v, +%s) = %v, %d; want %v, %d", k, at.Sub(t0), ok, n, want, wantN)
		}
	}
	admit(a, t0, true, 0)
	for i := range 10 {
		admit(a, t0.Add(time.Duration(i)*time.Second), false, 0)
	}
	admit(b, t0.Add(time.Second), true, 0)
	admit(c, t0.Add(time.Second), true, 0)
	admit(a, t0.Add(time.Minute-time.Nanosecond), false, 0)
	admit(a, t0.Add(time.Minute), true, 11)
	admit(a, t0.Add(time.Minute+time.Second), false, 0)
	// A key quiet for long: its next entry counts what was left out since
	// its last one.
	admit(a, t0.Add(time.Hour), true, 1)
	admit(b, t0.Add(time.Hour), true, 0)
	// A clock that goes back admits nothing early.
	admit(a, t0.Add(30*time.Minute), false, 0)

	if s := oplog.NewSampler(0); s.Interval() != oplog.DefaultSampleInterval {
		t.Errorf("NewSampler(0) interval %s", s.Interval())
	}
}

// TestSamplerBoundsKeys: a Sampler tracks at most MaxSampleKeys keys; a new
// key is admitted again once others have passed their interval, and no key
// is admitted twice within one interval.
func TestSamplerBoundsKeys(t *testing.T) {
	t.Parallel()
	s := oplog.NewSampler(time.Minute)
	key := func(i int) oplog.SampleKey {
		return oplog.SampleKey{EnvironmentID: 1, IntegrationKey: fmt.Sprint("i", i), Operation: "incoming", Outcome: "accepted"}
	}
	var wg sync.WaitGroup
	var mu sync.Mutex
	admitted := 0
	for g := range 8 {
		wg.Go(func() {
			for i := g; i < oplog.MaxSampleKeys+100; i += 8 {
				if ok, _ := s.Admit(key(i), t0); ok {
					mu.Lock()
					admitted++
					mu.Unlock()
				}
			}
		})
	}
	wg.Wait()
	if admitted != oplog.MaxSampleKeys {
		t.Fatalf("%d keys admitted in one interval, want %d", admitted, oplog.MaxSampleKeys)
	}
	if ok, _ := s.Admit(key(oplog.MaxSampleKeys+1000), t0.Add(59*time.Second)); ok {
		t.Errorf("a new key admitted while the Sampler is full of keys within their interval")
	}
	// Once the interval has passed, the old keys make room.
	if ok, n := s.Admit(key(oplog.MaxSampleKeys+1000), t0.Add(time.Minute)); !ok || n != 0 {
		t.Errorf("a new key after the interval: %v, %d", ok, n)
	}
	if ok, _ := s.Admit(key(oplog.MaxSampleKeys+1000), t0.Add(time.Minute+time.Second)); ok {
		t.Errorf("the new key admitted twice in one interval")
	}
}

// Sample the entries of something anyone can cause: one per key and
// minute, the next one saying how many it stands for.
func ExampleSampler() {
	s := oplog.NewSampler(time.Minute)
	k := oplog.SampleKey{EnvironmentID: 1, IntegrationKey: "notion", Operation: "incoming", Outcome: "accepted"}
	now := time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC)
	for i := range 100 {
		if ok, n := s.Admit(k, now.Add(time.Duration(i)*time.Second)); ok {
			fmt.Printf("entry at %ds, standing for %d more\n", i, n)
		}
	}
	// Output:
	// entry at 0s, standing for 0 more
	// entry at 60s, standing for 59 more
}
