package webhooks

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/embedauth/connect/egress"
	"github.com/embedauth/connect/jobs"
	"github.com/embedauth/connect/oplog"
	"github.com/embedauth/connect/store"
)

// DeliveryConfig tunes webhook delivery. The zero value gives the documented
// defaults: the spec's first attempts (the first and 2 fast retries, 100 ms
// then 200 ms apart), then the slow retries of DefaultSchedule, from 1
// second to 10 hours apart, so that the attempts of one delivery span
// about 26 hours (see Span); 20 s each, 64 at once per process.
//
// Attempts counts every POST of a delivery, the first included: a delivery
// has Attempts() of them, 1 + Retries + len(Schedule), and is failed when
// the last one fails. Retries are the attempts after the first. A delivery
// that waits for its next attempt is pending in the Store with the time of
// that attempt: it holds no worker and survives restarts.
type DeliveryConfig struct {
	// Retries is the number of fast retries after the first attempt, with
	// exponential backoff (Backoff, Multiplier). 0 means 2; negative means
	// none.
	Retries int
	// Backoff is the wait before the first retry. Defaults to 100 ms.
	Backoff time.Duration
	// Multiplier grows the wait before each further fast retry: the wait
	// before retry n (from 0) is Backoff·Multiplier^n. Defaults to 2.
	Multiplier float64
	// Schedule lists the waits before the slow retries, which follow the
	// fast ones: the wait before the first slow retry, after the last
	// fast attempt failed, then before each next one. nil means
	// DefaultSchedule; an empty, non-nil slice means no slow retries (the
	// fast ones alone). Every wait must be positive.
	Schedule []time.Duration
	// Timeout bounds one attempt: connecting, sending and reading the
	// response. Defaults to 20 s.
	Timeout time.Duration
	// MaxRetryAfter caps the wait asked for by a 429 or 503 response's
	// Retry-After header. Such a wait postpones the next attempt when it
	// is longer than the scheduled one; it never brings it forward, so
	// that a receiver that answers "retry after 1 second" cannot use up
	// the schedule in seconds. Defaults to 10 minutes.
	MaxRetryAfter time.Duration
	// Concurrency is the number of deliveries one process attempts at
	// once. Defaults to 64.
	Concurrency int
	// Lease is how long the deliveries a process claimed stay its own:
	// when it dies, another process takes them over once the lease ends.
	// An attempt of a claimed delivery starts within 2·Timeout of the
	// claim and lasts at most Timeout, so Lease must exceed three times
	// Timeout (otherwise another process could attempt a delivery that is
	// still being attempted). Defaults to 3·Timeout plus 1 minute, which
	// also covers storing the attempt's outcome (normally milliseconds; a
	// store that takes longer than the margin may see the webhook sent
	// again, as after a crash).
	Lease time.Duration
	// PollInterval is how often a started Deliverer looks for due
	// deliveries that no job announced: those that another process left
	// when it died, those whose job was skipped because an equal job was
	// just finishing, and retries scheduled by another process. Defaults
	// to 1 second; each look is one indexed query.
	PollInterval time.Duration
	// Policy is the outbound address policy of the default Client. Webhook
	// URLs are set by an environment's API-key holders, so the zero Policy
	// refuses loopback, private and every other special address (see
	// package egress); a host whose webhook receivers live on its own
	// network allows them here.
	Policy egress.Policy
	// Client sends the POSTs. Defaults to a client that enforces Policy at
	// dial time and follows no redirects (a redirect is a failed attempt).
	// A client set here replaces Policy: its transport must enforce an
	// address policy itself (build it on egress.NewTransport). Timeout
	// applies to every client.
	Client *http.Client
}

// Defaults of DeliveryConfig.
const (
	DefaultRetries       = 2
	DefaultBackoff       = 100 * time.Millisecond
	DefaultMultiplier    = 2
	DefaultTimeout       = 20 * time.Second
	DefaultMaxRetryAfter = 10 * time.Minute
	DefaultConcurrency   = 64
	DefaultPollInterval  = time.Second
	// leaseMargin is added to three times Timeout for the default Lease.
	leaseMargin = time.Minute
)

// DefaultSchedule returns the default waits of the slow retries (see
// DeliveryConfig.Schedule): 1 s, 5 s, 10 s, 30 s, 1 min, 2 min, 5 min,
// 10 min, 30 min, 1 h, 2 h, 4 h, 8 h and 10 h. With the default fast
// retries, a delivery has 17 attempts over about 25 hours 49 minutes: an
// outage of the receiver shorter than a day loses nothing, and the short
// first waits deliver within seconds of the end of the usual short
// outages (a deploy, a restart: a webhook that met a 10-second outage
// arrives at most 10 s after it ended). Like the schedules of the major
// webhook senders, waits then grow to hours, so that a receiver down for
// long gets a few attempts an hour rather than a flood.
func DefaultSchedule() []time.Duration {
	return []time.Duration{
		time.Second, 5 * time.Second, 10 * time.Second, 30 * time.Second, time.Minute, 2 * time.Minute,
		5 * time.Minute, 10 * time.Minute, 30 * time.Minute, time.Hour, 2 * time.Hour, 4 * time.Hour,
		8 * time.Hour, 10 * time.Hour,
	}
}

// excerptBytes caps the response body kept in the operations log.
const excerptBytes = 256

func (c DeliveryConfig) withDefaults() DeliveryConfig {
	c.Retries = c.retries()
	c.Schedule = c.schedule()
	if c.Backoff <= 0 {
		c.Backoff = DefaultBackoff
	}
	if c.Multiplier <= 0 {
		c.Multiplier = DefaultMultiplier
	}
	if c.Timeout <= 0 {
		c.Timeout = DefaultTimeout
	}
	if c.MaxRetryAfter <= 0 {
		c.MaxRetryAfter = DefaultMaxRetryAfter
	}
	if c.Concurrency <= 0 {
		c.Concurrency = DefaultConcurrency
	}
	if c.Lease <= 0 {
		c.Lease = 3*c.Timeout + leaseMargin
	}
	if c.PollInterval <= 0 {
		c.PollInterval = DefaultPollInterval
	}
	if c.Client == nil {
		c.Client = defaultClient(c.Policy)
	}
	return c
}

// idleConnsPerHost is how many idle connections the default client keeps to
// one receiver. Most deliveries go to an environment's one or two URLs, from
// many lanes at once: net/http's default of 2 would close and reopen a
// connection for nearly every delivery.
const idleConnsPerHost = 256

// defaultClient returns the client of a DeliveryConfig without one: it
// follows no redirects and keeps connections to receivers alive.
func defaultClient(policy egress.Policy) *http.Client {
	t := egress.NewTransport(policy)
	t.MaxIdleConns = 0 // no global cap; per host below
	t.MaxIdleConnsPerHost = idleConnsPerHost
	t.IdleConnTimeout = 90 * time.Second
	return &http.Client{
		Transport:     t,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}
}

// Validate reports a configuration that makes no sense.
func (c DeliveryConfig) Validate() error {
	switch {
	case c.Backoff < 0:
		return errors.New("webhooks: DeliveryConfig.Backoff must not be negative")
	case c.Multiplier < 0 || math.IsNaN(c.Multiplier) || math.IsInf(c.Multiplier, 0):
		return errors.New("webhooks: DeliveryConfig.Multiplier must be a positive number")
	case c.Timeout < 0:
		return errors.New("webhooks: DeliveryConfig.Timeout must not be negative")
	case c.MaxRetryAfter < 0:
		return errors.New("webhooks: DeliveryConfig.MaxRetryAfter must not be negative")
	case c.Concurrency < 0:
		return errors.New("webhooks: DeliveryConfig.Concurrency must not be negative")
	case c.PollInterval < 0:
		return errors.New("webhooks: DeliveryConfig.PollInterval must not be negative")
	case c.Lease < 0:
		return errors.New("webhooks: DeliveryConfig.Lease must not be negative")
	}
	for i, w := range c.Schedule {
		if w <= 0 {
			return fmt.Errorf("webhooks: DeliveryConfig.Schedule[%d] (%s) must be positive", i, w)
		}
	}
	if d := c.withDefaults(); c.Lease > 0 && d.Lease <= 3*d.Timeout {
		return fmt.Errorf("webhooks: DeliveryConfig.Lease (%s) must exceed three times Timeout (%s)", d.Lease, d.Timeout)
	}
	return nil
}

// Attempts returns the number of attempts of one delivery: the first, the
// fast Retries and one per wait of the Schedule.
func (c DeliveryConfig) Attempts() int { return 1 + c.retries() + len(c.schedule()) }

// Span returns the time from the first attempt of a delivery to its last,
// when every attempt fails at once and no Retry-After asks for more: the
// sum of the waits. An outage of the receiver shorter than that loses no
// webhook.
func (c DeliveryConfig) Span() time.Duration {
	c.Client = http.DefaultClient // not used; spares withDefaults building one
	c = c.withDefaults()
	var span time.Duration
	for n := 1; n < c.budget(); n++ {
		span += c.wait(n)
	}
	return span
}

// budget is Attempts of a configuration with its defaults applied.
func (c DeliveryConfig) budget() int { return 1 + c.Retries + len(c.Schedule) }

// retries resolves Retries: 0 means DefaultRetries, negative none.
func (c DeliveryConfig) retries() int {
	switch {
	case c.Retries == 0:
		return DefaultRetries
	case c.Retries < 0:
		return 0
	}
	return c.Retries
}

// schedule resolves Schedule: nil means DefaultSchedule.
func (c DeliveryConfig) schedule() []time.Duration {
	if c.Schedule == nil {
		return DefaultSchedule()
	}
	return c.Schedule
}

// wait returns the wait after failed attempt n (from 1) of a configuration
// with its defaults applied: the fast retries' backoff, then the Schedule.
func (c DeliveryConfig) wait(n int) time.Duration {
	if n > c.Retries {
		if i := n - c.Retries - 1; i < len(c.Schedule) {
			return c.Schedule[i]
		}
		// No attempt follows; the last wait, for a caller that asks.
		if len(c.Schedule) > 0 {
			return c.Schedule[len(c.Schedule)-1]
		}
	}
	d := float64(c.Backoff) * math.Pow(c.Multiplier, float64(n-1))
	if d > float64(24*time.Hour) {
		return 24 * time.Hour
	}
	return time.Duration(d)
}

// SigningKeyFunc returns the plaintext signing key of an environment.
type SigningKeyFunc func(ctx context.Context, environmentID int64) (string, error)

// DelivererConfig gives a Deliverer its parts. connect.New builds one from
// the Service's.
type DelivererConfig struct {
	// Delivery tunes retries, timeouts, concurrency and the HTTP client.
	Delivery DeliveryConfig
	// Store holds the outbox: the Deliverer claims due deliveries from it
	// and records each attempt. Required.
	Store Store
	// SigningKey opens an environment's signing key. Required.
	SigningKey SigningKeyFunc
	// Log records every attempt, sampled for Unverified deliveries (see
	// Sampler). Optional.
	Log *oplog.Writer
	// Sampler samples the log entries of the attempts of Unverified
	// deliveries (forwards of provider webhooks that anyone may have
	// sent): at most one per environment, integration and outcome
	// (delivered, retrying, given_up) in each of its intervals, by Now,
	// with the count of those left out as meta "suppressed"; each
	// delivery keeps its own status, last error and attempt count. The
	// attempts of other deliveries are all logged. Share the incoming
	// webhook handler's (IncomingConfig.Sampler) to bound what one process
	// writes for both. Defaults to a Sampler of its own, of
	// oplog.DefaultSampleInterval.
	Sampler *oplog.Sampler
	// Transactor, when set, stores each attempt's outcome and its log
	// entry atomically. Optional.
	Transactor store.Transactor
	// Logger receives the errors of background delivery (a store that
	// fails). Defaults to discarding them.
	Logger *slog.Logger
	// Now stamps attempts (X-Svc-Timestamp) and records, and clocks the
	// Sampler. Defaults to time.Now. Which deliveries are due, and when retries fall due, is
	// always decided by the real clock, so that a test may freeze Now.
	Now func() time.Time
}

// Deliverer delivers the webhooks of the outbox. Started, it works in the
// background: it claims due deliveries from the Store in batches and
// attempts up to Concurrency of them at once, each POST in its own lane;
// it looks whenever a delivery job runs (its Handle, the handler of
// JobKind), every PollInterval, and when a retry it scheduled falls due.
// Several processes on one database share the outbox: a claim gives each
// delivery to one of them for the claim's lease.
type Deliverer struct {
	cfg        DeliveryConfig
	store      Store
	signingKey SigningKeyFunc
	log        *oplog.Writer
	sampler    *oplog.Sampler
	tx         store.Transactor
	logger     *slog.Logger
	now        func() time.Time
	// recorder is the Store when it is an AttemptRecorder (and there is a
	// Log); nil otherwise. Each drain then stores the outcomes of its
	// attempts in the background, one batch at a time (see recordQueue).
	recorder AttemptRecorder
	// recordsQueued counts the outcomes handed to a recordQueue and not
	// yet taken into a statement (tests watch it).
	recordsQueued atomic.Int64
	// kick asks the background loop to look for due deliveries; buffered
	// (1), so that kicks coalesce.
	kick chan struct{}

	mu sync.Mutex
	// retryAt is the earliest retry that an attempt of this process
	// scheduled since the loop last looked; zero when none. Guarded by mu.
	retryAt time.Time
	// run is the background loop while started; nil otherwise. Guarded by
	// mu.
	run *loopState
}

// loopState is one run of the background loop, from Start to Stop.
type loopState struct {
	// claim ends claiming (Stop); attempts in flight go on.
	claim context.Context
	// stopClaiming cancels claim.
	stopClaiming context.CancelFunc
	// cancelAttempts cuts the attempts in flight short (Stop, once its
	// context ends).
	cancelAttempts context.CancelFunc
	attempts       context.Context
	done           chan struct{}
}

// maxBatch caps the attempts recorded in one statement.
const maxBatch = 500

// NewDeliverer returns a Deliverer.
func NewDeliverer(cfg DelivererConfig) *Deliverer {
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if cfg.Sampler == nil {
		cfg.Sampler = oplog.NewSampler(oplog.DefaultSampleInterval)
	}
	d := &Deliverer{cfg: cfg.Delivery.withDefaults(), store: cfg.Store, signingKey: cfg.SigningKey, log: cfg.Log,
		sampler: cfg.Sampler, tx: cfg.Transactor, logger: cfg.Logger, now: cfg.Now, kick: make(chan struct{}, 1)}
	if r, ok := cfg.Store.(AttemptRecorder); ok && cfg.Log != nil {
		d.recorder = r
	}
	return d
}

// Handle is the handler of JobKind jobs: it asks the background loop of a
// started Deliverer to deliver what is due, and returns at once. The
// deliveries themselves are in the Store; the job, inserted in the
// transaction that stored them, only says that there is work.
func (d *Deliverer) Handle(ctx context.Context, run *jobs.Run) error {
	if len(run.Args) > 0 && !json.Valid(run.Args) {
		return jobs.Cancel(fmt.Errorf("webhooks: bad args of %s job: %q", JobKind, run.Args))
	}
	d.Kick()
	return nil
}

// Kick asks the background loop of a started Deliverer to look for due
// deliveries now. It never blocks; kicks made while the loop is busy make it
// look once more when it is done.
func (d *Deliverer) Kick() {
	select {
	case d.kick <- struct{}{}:
	default:
	}
}

// Start starts delivering in the background until Stop: at once, on every
// Kick (every delivery job), every PollInterval, and when a retry falls due.
// ctx's values reach the attempts; ending it does not stop the Deliverer.
func (d *Deliverer) Start(ctx context.Context) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.run != nil {
		return errors.New("webhooks: Deliverer already started")
	}
	base := context.WithoutCancel(ctx)
	ls := &loopState{done: make(chan struct{})}
	ls.claim, ls.stopClaiming = context.WithCancel(base)
	ls.attempts, ls.cancelAttempts = context.WithCancel(base)
	d.run = ls
	go d.loop(ls)
	d.Kick()
	return nil
}

// Stop stops claiming deliveries and waits for the attempts in flight to
// end. When ctx ends first, it cuts them short: a cut attempt does not count
// and its delivery is due again at once, for this process after the next
// Start or for another process. Stop on a stopped Deliverer returns nil.
func (d *Deliverer) Stop(ctx context.Context) error {
	d.mu.Lock()
	ls := d.run
	d.run = nil
	d.mu.Unlock()
	if ls == nil {
		return nil
	}
	ls.stopClaiming()
	select {
	case <-ls.done:
		ls.cancelAttempts()
		return nil
	case <-ctx.Done():
	}
	ls.cancelAttempts()
	// A cut attempt returns at once; releasing its delivery is one short
	// write.
	t := time.NewTimer(stopGrace)
	defer t.Stop()
	select {
	case <-ls.done:
		return nil
	case <-t.C:
		return fmt.Errorf("webhooks: Stop: deliveries still in flight %s after they were cut short: %w", stopGrace, ctx.Err())
	}
}

// keyRetry is how long a delivery waits when its signing key could not be
// read.
const keyRetry = time.Second

// stopGrace is how long Stop waits for cut attempts to return.
const stopGrace = 10 * time.Second

// loop is the background loop: it drains the outbox whenever asked, on
// every tick, and when a retry this process scheduled falls due.
func (d *Deliverer) loop(ls *loopState) {
	defer close(ls.done)
	tick := time.NewTicker(d.cfg.PollInterval)
	defer tick.Stop()
	retry := time.NewTimer(time.Hour)
	retry.Stop()
	defer retry.Stop()
	for {
		select {
		case <-ls.claim.Done():
			return
		case <-d.kick:
		case <-tick.C:
		case <-retry.C:
		}
		if err := d.drain(ls.claim, ls.attempts); err != nil && ls.claim.Err() == nil {
			d.logger.Error("webhooks: delivering from the outbox failed; will look again", "err", err)
		}
		d.mu.Lock()
		at := d.retryAt
		d.retryAt = time.Time{}
		d.mu.Unlock()
		if !at.IsZero() {
			retry.Reset(max(time.Until(at), 0))
		}
	}
}

// DeliverDue delivers every delivery that is due now, from this process, and
// returns once none is due: deliveries whose attempt failed and wait for a
// retry stay pending, due later. Start does this in the background; tests
// and tools may call it directly. When ctx ends it stops claiming and cuts
// the attempts in flight short (they do not count).
func (d *Deliverer) DeliverDue(ctx context.Context) error {
	return d.drain(ctx, ctx)
}

// drain claims due deliveries, in batches of Concurrency, and attempts them
// in up to Concurrency lanes, until a claim finds none or claim ends. The
// attempts run with the context attempts. One batch is claimed ahead, while
// the lanes work on the one before. So a claimed delivery waits for a lane
// for at most 2·Timeout (the batch before it, then a lane), and its attempt
// ends within 3·Timeout of the claim: the default Lease leaves a minute
// more, for storing the outcome. Outcomes are stored in the background
// (recordQueue) when the Store is an AttemptRecorder; drain returns once
// they all are.
func (d *Deliverer) drain(claim, attempts context.Context) error {
	var (
		work  chan *Delivery
		lanes sync.WaitGroup
		rec   *recordQueue
	)
	defer func() {
		if work != nil {
			close(work)
			lanes.Wait()
		}
		if rec != nil {
			// Every outcome is stored before drain returns: the caller
			// then looks for due deliveries (and retries) again.
			rec.close()
		}
	}()
	batches := make(chan []*Delivery, 1)
	errc := make(chan error, 1)
	stop := make(chan struct{})
	defer close(stop)
	go func() {
		defer close(batches)
		for claim.Err() == nil {
			now := schedNow()
			ds, err := d.store.ClaimDeliveries(attempts, now, d.cfg.Concurrency, now.Add(d.cfg.Lease))
			if err != nil {
				errc <- fmt.Errorf("webhooks: claim due deliveries: %w", err)
				return
			}
			if len(ds) == 0 {
				return
			}
			select {
			case batches <- ds:
			case <-stop:
				d.release(attempts, ds)
				return
			}
		}
	}()
	for ds := range batches {
		if work == nil {
			if d.recorder != nil {
				rec = d.startRecording(attempts)
			}
			work = make(chan *Delivery)
			for range d.cfg.Concurrency {
				lanes.Go(func() {
					for del := range work {
						d.deliver(attempts, rec, del)
					}
				})
			}
		}
		for i, del := range ds {
			select {
			case work <- del:
			case <-claim.Done():
				d.release(attempts, ds[i:])
				// The claimer stops too; release what it claimed ahead.
				for rest := range batches {
					d.release(attempts, rest)
				}
				return nil
			}
		}
	}
	select {
	case err := <-errc:
		return err
	default:
		return nil
	}
}

// release makes claimed deliveries that were not attempted due again at
// once.
func (d *Deliverer) release(ctx context.Context, ds []*Delivery) {
	d.releaseAt(ctx, ds, schedNow())
}

// releaseAt makes claimed deliveries that were not attempted due again at
// the time at, taking back the attempt their claim counted.
func (d *Deliverer) releaseAt(ctx context.Context, ds []*Delivery, at time.Time) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	defer cancel()
	for _, del := range ds {
		del.NextAttemptAt = at
		del.Attempts = max(del.Attempts-1, 0)
		if err := d.store.UpdateDelivery(ctx, del); err != nil && !errors.Is(err, store.ErrNotFound) {
			// The lease ends it anyway.
			d.logger.Error("webhooks: releasing a claimed delivery failed", "delivery_id", del.ID, "err", err)
		}
	}
}

// deliver makes one attempt of a claimed delivery and records its outcome:
// delivered, failed (no attempts left), or pending and due after the
// attempt's wait (see DeliveryConfig), or later when a 429's or 503's
// Retry-After asks for more. The claim counted the attempt (del.Attempts
// is its number); an attempt that does not happen after all, or that ctx
// cuts short, is not counted: the delivery is released, due again at once.
// With rec, the outcome is handed to it and stored in the background;
// otherwise it is stored before deliver returns.
func (d *Deliverer) deliver(ctx context.Context, rec *recordQueue, del *Delivery) {
	if err := d.deliverOnce(ctx, rec, del); err != nil && ctx.Err() == nil {
		d.logger.Error("webhooks: recording a delivery attempt failed", "delivery_id", del.ID, "err", err)
	}
}

func (d *Deliverer) deliverOnce(ctx context.Context, rec *recordQueue, del *Delivery) error {
	if del.Status != StatusPending {
		return nil
	}
	budget := d.cfg.budget()
	if del.Attempts > budget {
		// No attempt left for this one: the budget shrank since the
		// delivery was queued, or a crash ended its last attempt before
		// the outcome was recorded. It is not attempted: the claim's count
		// is taken back.
		del.Attempts--
		del.Status = StatusFailed
		if del.LastError == "" {
			del.LastError = "no attempts left"
		}
		del.UpdatedAt = d.stamp()
		return d.update(ctx, del)
	}
	key, err := d.signingKey(ctx, del.EnvironmentID)
	if errors.Is(err, store.ErrNotFound) {
		// The environment is gone: nothing will ever deliver this.
		del.Attempts = max(del.Attempts-1, 0)
		del.Status = StatusFailed
		del.LastError = "environment not found"
		del.UpdatedAt = d.stamp()
		return d.update(ctx, del)
	}
	if err != nil {
		// The store failed: try again later (not at once, which the drain
		// would do in a loop), without counting an attempt.
		d.releaseAt(ctx, []*Delivery{del}, schedNow().Add(keyRetry))
		return err
	}
	res := d.attempt(ctx, del, key)
	if ctx.Err() != nil {
		if !res.ok {
			// Stopping: this attempt was cut short and does not count.
			d.release(ctx, []*Delivery{del})
			return nil
		}
		// Delivered just as the service stops: record it anyway so that
		// it is not sent again.
		sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
		defer cancel()
		ctx = sctx
	}
	del.LastStatusCode = res.status
	del.LastError = res.errText
	del.UpdatedAt = d.stamp()
	switch {
	case res.ok:
		del.Status = StatusDelivered
		del.LastError = ""
		at := del.UpdatedAt
		del.DeliveredAt = &at
	case del.Attempts >= budget:
		del.Status = StatusFailed
	default:
		wait := d.cfg.wait(del.Attempts)
		if res.retryAfter >= 0 {
			// Retry-After postpones, never hastens (see MaxRetryAfter).
			wait = max(wait, min(res.retryAfter, d.cfg.MaxRetryAfter))
		}
		del.NextAttemptAt = schedNow().Add(wait)
		res.next = wait
	}
	if err := d.save(ctx, rec, del, res, budget); err != nil {
		return err
	}
	if del.Status == StatusPending {
		d.mu.Lock()
		if d.retryAt.IsZero() || del.NextAttemptAt.Before(d.retryAt) {
			d.retryAt = del.NextAttemptAt
		}
		d.mu.Unlock()
	}
	return nil
}

// update stores a delivery's new state, ignoring one deleted meanwhile (its
// environment was).
func (d *Deliverer) update(ctx context.Context, del *Delivery) error {
	if err := d.store.UpdateDelivery(ctx, del); err != nil && !errors.Is(err, store.ErrNotFound) {
		return err
	}
	return nil
}

func (d *Deliverer) stamp() time.Time { return d.now().UTC().Truncate(time.Microsecond) }

// schedNow is the time on the outbox's schedule (Delivery.NextAttemptAt):
// the real clock, at the precision of Postgres.
func schedNow() time.Time { return time.Now().UTC().Truncate(time.Microsecond) }

type attemptResult struct {
	ok       bool
	status   int
	errText  string
	excerpt  string
	duration time.Duration
	// retryAfter is the wait a 429 or 503 asked for; -1 when none.
	retryAfter time.Duration
	// next is the wait before the next attempt of a delivery that stays
	// pending.
	next time.Duration
}

// attempt POSTs the delivery once.
func (d *Deliverer) attempt(ctx context.Context, del *Delivery, key string) attemptResult {
	res := attemptResult{retryAfter: -1}
	actx, cancel := context.WithTimeout(ctx, d.cfg.Timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(actx, http.MethodPost, del.URL, bytes.NewReader(del.Body))
	if err != nil {
		res.errText = "invalid URL"
		return res
	}
	for k, v := range Sign(key, del.Body, del.ID, d.now()) {
		req.Header[k] = v
	}
	req.Header.Set("User-Agent", "embedauth-connect-webhooks")
	start := time.Now()
	resp, err := d.cfg.Client.Do(req)
	if err != nil {
		res.duration = time.Since(start)
		res.errText = describe(actx, err, d.cfg.Timeout)
		return res
	}
	excerpt, _ := io.ReadAll(io.LimitReader(resp.Body, excerptBytes))
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
	resp.Body.Close()
	res.duration = time.Since(start)
	res.status = resp.StatusCode
	res.excerpt = cleanExcerpt(excerpt)
	if resp.StatusCode >= 200 && resp.StatusCode < 300 {
		res.ok = true
		return res
	}
	res.errText = "status " + strconv.Itoa(resp.StatusCode)
	if resp.StatusCode == http.StatusTooManyRequests || resp.StatusCode == http.StatusServiceUnavailable {
		if ra, ok := parseRetryAfter(resp.Header.Get("Retry-After"), d.now()); ok {
			res.retryAfter = ra
		}
	}
	return res
}

// describe turns a client error into a message without the URL (which may
// hold credentials), the address, the port or the dial error (which would
// let whoever reads the log tell an open port from a closed one):
// "address not allowed" (with the setting that allows private networks,
// when the policy names one), a timeout, or "could not reach the
// receiver".
func describe(actx context.Context, err error, timeout time.Duration) string {
	switch {
	case egress.AddressNotAllowed(err):
		return egress.Describe(err).Message
	case errors.Is(actx.Err(), context.DeadlineExceeded):
		return "timeout after " + timeout.String()
	}
	return "could not reach the receiver"
}

// cleanExcerpt returns at most excerptBytes of a response body as valid
// UTF-8 (invalid bytes, such as a rune cut at the end, are dropped).
func cleanExcerpt(b []byte) string {
	if len(b) > excerptBytes {
		b = b[:excerptBytes]
	}
	return strings.ToValidUTF8(string(b), "")
}

// parseRetryAfter reads a Retry-After value: delay seconds or an HTTP date.
func parseRetryAfter(v string, now time.Time) (time.Duration, bool) {
	v = strings.TrimSpace(v)
	if v == "" {
		return 0, false
	}
	if isDigits(v) {
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil || n > int64(24*time.Hour/time.Second) {
			return 24 * time.Hour, true
		}
		return time.Duration(n) * time.Second, true
	}
	t, err := http.ParseTime(v)
	if err != nil {
		return 0, false
	}
	return max(t.Sub(now), 0), true
}

// save stores the outcome of an attempt and its log entry: through rec
// when there is one, otherwise at once, in one transaction when there is a
// Transactor.
func (d *Deliverer) save(ctx context.Context, rec *recordQueue, del *Delivery, res attemptResult, budget int) error {
	e := d.entry(del, res, budget)
	if rec != nil {
		if e != nil {
			d.log.Stamp(e)
		}
		// The queue holds a copy: del goes on changing.
		snapshot := *del
		rec.add(Attempt{Delivery: &snapshot, Entry: e})
		return nil
	}
	do := func(ctx context.Context) error {
		err := d.store.UpdateDelivery(ctx, del)
		if errors.Is(err, store.ErrNotFound) {
			return nil // deleted with its environment: nothing to log
		}
		if err != nil {
			return err
		}
		return d.record(ctx, e)
	}
	if d.tx != nil {
		// The outcome may be acknowledged before it is on disk: losing it
		// in a database crash only means the delivery is claimed again
		// when its lease ends and the receiver gets the webhook twice
		// under the same delivery id, which deliveries are anyway (at
		// least once).
		return d.tx.WithTx(store.WithRelaxedDurability(ctx), do)
	}
	return do(ctx)
}

// record writes the log entry of an attempt, if it has one.
func (d *Deliverer) record(ctx context.Context, e *oplog.Entry) error {
	if e == nil {
		return nil
	}
	if _, err := d.log.Record(ctx, e); err != nil {
		return fmt.Errorf("webhooks: log delivery attempt: %w", err)
	}
	return nil
}

// Outcomes of an attempt, the Outcome of the oplog.SampleKey of an
// Unverified delivery's attempt.
const (
	outcomeDelivered = "delivered"
	outcomeRetrying  = "retrying"
	outcomeGivenUp   = "given_up"
)

// entry returns the log entry of an attempt: nil without a Log, and for an
// attempt of an Unverified delivery that the Sampler leaves out.
func (d *Deliverer) entry(del *Delivery, res attemptResult, budget int) *oplog.Entry {
	if d.log == nil {
		return nil
	}
	suppressed := 0
	if del.Unverified {
		outcome := outcomeRetrying
		switch {
		case res.ok:
			outcome = outcomeDelivered
		case del.Status == StatusFailed:
			outcome = outcomeGivenUp
		}
		k := oplog.SampleKey{EnvironmentID: del.EnvironmentID, IntegrationKey: del.IntegrationKey, Operation: "delivery", Outcome: outcome}
		ok, n := d.sampler.Admit(k, d.now())
		if !ok {
			return nil
		}
		suppressed = n
	}
	e := attemptEntry(del, res, budget)
	if del.Unverified {
		e.Meta["unverified"] = true
		if suppressed > 0 {
			e.Meta["suppressed"] = suppressed
		}
	}
	return e
}

// attemptEntry is the operations log entry of one attempt.
func attemptEntry(del *Delivery, res attemptResult, budget int) *oplog.Entry {
	status := oplog.StatusFailure
	msg := fmt.Sprintf("%s webhook attempt %d of %d failed: %s", del.Type, del.Attempts, budget, res.errText)
	if res.ok {
		status = oplog.StatusSuccess
		msg = fmt.Sprintf("%s webhook delivered (attempt %d of %d, status %d)", del.Type, del.Attempts, budget, res.status)
	} else if del.Status == StatusFailed {
		msg += "; giving up"
	} else {
		msg += "; next attempt in " + res.next.String()
	}
	meta := map[string]any{
		"delivery_id": del.ID,
		"event_id":    del.EventID,
		"url":         redactURL(del.URL),
		"attempt":     del.Attempts,
		"status":      res.status,
		"duration_ms": res.duration.Milliseconds(),
		"response":    res.excerpt,
	}
	if res.errText != "" {
		meta["error"] = res.errText
	}
	if !res.ok && del.Status == StatusPending {
		meta["next_attempt_in_ms"] = res.next.Milliseconds()
	}
	return &oplog.Entry{
		EnvironmentID:  del.EnvironmentID,
		Type:           "webhook",
		Operation:      "delivery",
		Status:         status,
		IntegrationKey: del.IntegrationKey,
		ConnectionID:   del.ConnectionID,
		Message:        msg,
		Meta:           meta,
	}
}

// redactURL hides the password of a URL's user info.
func redactURL(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		return "(invalid URL)"
	}
	return u.Redacted()
}

// recordQueue stores the outcomes of one drain's attempts in the
// background: a lane hands its outcome over and goes on to its next
// delivery instead of waiting for the database. One statement runs at a
// time, with every outcome handed over while the one before ran (up to
// maxBatch): one stream of large batches measured faster than several
// streams of small ones, as each statement costs more than its rows.
//
// An outcome that fails to be stored is logged and dropped: its delivery
// stays claimed until the lease ends, and is then attempted again (at
// least once).
type recordQueue struct {
	in     chan Attempt
	done   chan struct{}
	queued *atomic.Int64 // the Deliverer's recordsQueued
}

// recordTimeout bounds one statement of a recordQueue. Outcomes are stored
// even while the Deliverer stops, so no context of the caller bounds it.
const recordTimeout = 30 * time.Second

// startRecording starts a recordQueue; ctx's values reach the store.
func (d *Deliverer) startRecording(ctx context.Context) *recordQueue {
	rq := &recordQueue{in: make(chan Attempt, maxBatch), done: make(chan struct{}), queued: &d.recordsQueued}
	base := context.WithoutCancel(ctx)
	go func() {
		defer close(rq.done)
		batch := make([]Attempt, 0, maxBatch)
		for a := range rq.in {
			batch = append(batch[:0], a)
		more:
			for len(batch) < maxBatch {
				select {
				case a, ok := <-rq.in:
					if !ok {
						break more
					}
					batch = append(batch, a)
				default:
					break more
				}
			}
			rq.queued.Add(-int64(len(batch)))
			sctx, cancel := context.WithTimeout(base, recordTimeout)
			err := d.recorder.RecordAttempts(sctx, batch)
			cancel()
			if err != nil {
				d.logger.Error("webhooks: recording delivery attempts failed; their deliveries are attempted again when their lease ends",
					"attempts", len(batch), "err", err)
			}
			clear(batch) // let the attempts be collected
		}
	}()
	return rq
}

// add hands an outcome over; it waits only when maxBatch outcomes are
// already waiting.
func (rq *recordQueue) add(a Attempt) {
	rq.queued.Add(1)
	rq.in <- a
}

// close waits until every outcome handed over is stored (or failed to be).
func (rq *recordQueue) close() {
	close(rq.in)
	<-rq.done
}
