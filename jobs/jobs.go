package jobs

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"
)

// Job is a unit of background work.
type Job struct {
	// Kind selects the handler. Required.
	Kind string
	// Args are the handler's input, JSON.
	Args json.RawMessage
	// MaxAttempts bounds how often a failing job is run; 0 means
	// DefaultMaxAttempts.
	MaxAttempts int
	// RunAt delays the first run; zero means now.
	RunAt time.Time
	// UniqueKey, when set, makes the job unique among the jobs of its
	// Kind with the same UniqueKey that wait to run or are running:
	// enqueueing it while such a job exists adds nothing (and is no
	// error). A job that has completed, failed for good or been cancelled
	// no longer counts. Use it for jobs that only say "there is work", of
	// which one waiting is enough.
	UniqueKey string
	// Timeout, when positive, bounds this job's run instead of the
	// Scheduler's default job timeout (a Scheduler without one, such as
	// Memory, leaves timing to the handler).
	Timeout time.Duration
}

// DefaultMaxAttempts is the number of runs of a job whose handler keeps
// failing, unless Job.MaxAttempts says otherwise.
const DefaultMaxAttempts = 5

// Run is one execution of a job, passed to its handler.
type Run struct {
	// ID identifies the job; it is the same across its attempts.
	ID   string
	Kind string
	Args json.RawMessage
	// Attempt counts runs of this job, from 1.
	Attempt     int
	MaxAttempts int
}

// Handler runs a job. Returning nil completes it. Returning an error makes
// the scheduler retry it later with backoff until MaxAttempts; an error
// wrapped by Cancel is not retried; one made by Snooze runs the job again
// after the given delay without counting an attempt.
type Handler func(ctx context.Context, run *Run) error

// Scheduler runs jobs.
type Scheduler interface {
	// Register sets the handler of a kind. It must be called before Start.
	Register(kind string, h Handler) error
	// Enqueue inserts jobs. With a context from Store.WithTx the insert is
	// part of that transaction.
	Enqueue(ctx context.Context, jobs ...Job) error
	// Start starts working jobs in the background until Stop.
	Start(ctx context.Context) error
	// Stop stops taking new jobs and waits for running ones within ctx's
	// deadline; jobs still running then are cancelled and run again later
	// (by this or another process).
	Stop(ctx context.Context) error
}

type snoozeError struct{ d time.Duration }

func (e *snoozeError) Error() string { return fmt.Sprintf("jobs: snooze %s", e.d) }

// Snooze returns an error that makes the scheduler run the job again after
// d, without counting an attempt.
func Snooze(d time.Duration) error { return &snoozeError{d: d} }

// SnoozeDuration reports whether err asks for a snooze, and for how long.
func SnoozeDuration(err error) (time.Duration, bool) {
	var s *snoozeError
	if errors.As(err, &s) {
		return s.d, true
	}
	return 0, false
}

type cancelError struct{ err error }

func (e *cancelError) Error() string { return "jobs: cancelled: " + e.err.Error() }
func (e *cancelError) Unwrap() error { return e.err }

// Cancel wraps err so that the job fails at once, without retries.
func Cancel(err error) error { return &cancelError{err: err} }

// IsCancel reports whether err was made by Cancel.
func IsCancel(err error) bool {
	var c *cancelError
	return errors.As(err, &c)
}
