package webhooks

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/embedauth/connect/internal/batch"
	"github.com/embedauth/connect/jobs"
	"github.com/embedauth/connect/oplog"
	"github.com/embedauth/connect/store"
)

// DeliveryConfig tunes webhook delivery. The zero value gives the documented
// defaults: 3 attempts (the first and 2 retries), 100 ms then 200 ms apart,
// 20 s each.
type DeliveryConfig struct {
	// Retries is the number of attempts after the first. 0 means 2;
	// negative means none.
	Retries int
	// Backoff is the wait before the first retry. Defaults to 100 ms.
	Backoff time.Duration
	// Multiplier grows the wait before each further retry: the wait before
	// retry n (from 0) is Backoff·Multiplier^n. Defaults to 2.
	Multiplier float64
	// Timeout bounds one attempt: connecting, sending and reading the
	// response. Defaults to 20 s.
	Timeout time.Duration
	// MaxRetryAfter caps the wait asked for by a 429 or 503 response's
	// Retry-After header. Defaults to 10 minutes.
	MaxRetryAfter time.Duration
	// Client sends the POSTs. Defaults to a client that follows no
	// redirects (a redirect is a failed attempt). Timeout applies to every
	// client.
	Client *http.Client
}

// Defaults of DeliveryConfig.
const (
	DefaultRetries       = 2
	DefaultBackoff       = 100 * time.Millisecond
	DefaultMultiplier    = 2
	DefaultTimeout       = 20 * time.Second
	DefaultMaxRetryAfter = 10 * time.Minute
)

// snoozeAbove is the longest wait the delivery job sleeps through; a longer
// one ends the run with jobs.Snooze, so that no worker sleeps long.
const snoozeAbove = 2 * time.Second

// excerptBytes caps the response body kept in the operations log.
const excerptBytes = 256

func (c DeliveryConfig) withDefaults() DeliveryConfig {
	c.Retries = c.retries()
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
	if c.Client == nil {
		c.Client = defaultClient()
	}
	return c
}

// idleConnsPerHost is how many idle connections the default client keeps to
// one receiver. Most deliveries go to an environment's one or two URLs, from
// many workers at once: net/http's default of 2 would close and reopen a
// connection for nearly every delivery.
const idleConnsPerHost = 256

// defaultClient returns the client of a DeliveryConfig without one: it
// follows no redirects and keeps connections to receivers alive.
func defaultClient() *http.Client {
	t := http.DefaultTransport.(*http.Transport).Clone()
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
	}
	return nil
}

// Attempts returns the number of attempts of one delivery: 1 + Retries.
func (c DeliveryConfig) Attempts() int { return 1 + c.retries() }

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

// wait returns the wait after failed attempt n (from 1).
func (c DeliveryConfig) wait(n int) time.Duration {
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
	// Delivery tunes retries, timeouts and the HTTP client.
	Delivery DeliveryConfig
	// Store reads and updates the deliveries. Required.
	Store Store
	// SigningKey opens an environment's signing key. Required.
	SigningKey SigningKeyFunc
	// Log records every attempt. Optional.
	Log *oplog.Writer
	// Transactor, when set, stores each attempt's outcome and its log
	// entry atomically. Optional.
	Transactor store.Transactor
	// Now stamps attempts (X-Svc-Timestamp) and records. Defaults to
	// time.Now.
	Now func() time.Time
}

// Deliverer runs delivery jobs: its Handle is the handler of JobKind.
type Deliverer struct {
	cfg        DeliveryConfig
	store      Store
	signingKey SigningKeyFunc
	log        *oplog.Writer
	tx         store.Transactor
	now        func() time.Time
	// reads and records coalesce the store calls of concurrent jobs, when
	// the Store has DeliveriesGetter and AttemptRecorder; nil otherwise.
	reads   *batch.Batcher[string, *Delivery]
	records *batch.Batcher[Attempt, struct{}]
}

// maxBatch caps the deliveries read, or the attempts recorded, in one
// statement.
const maxBatch = 500

// NewDeliverer returns a Deliverer.
func NewDeliverer(cfg DelivererConfig) *Deliverer {
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	d := &Deliverer{cfg: cfg.Delivery.withDefaults(), store: cfg.Store, signingKey: cfg.SigningKey, log: cfg.Log,
		tx: cfg.Transactor, now: cfg.Now}
	if g, ok := cfg.Store.(DeliveriesGetter); ok {
		d.reads = &batch.Batcher[string, *Delivery]{Max: maxBatch, Do: func(ctx context.Context, ids []string) ([]*Delivery, error) {
			found, err := g.GetDeliveries(ctx, ids)
			if err != nil {
				return nil, err
			}
			byID := make(map[string]*Delivery, len(found))
			for _, del := range found {
				byID[del.ID] = del
			}
			out := make([]*Delivery, len(ids))
			for i, id := range ids {
				out[i] = byID[id] // nil when missing
			}
			return out, nil
		}}
	}
	if r, ok := cfg.Store.(AttemptRecorder); ok && cfg.Log != nil {
		d.records = &batch.Batcher[Attempt, struct{}]{Max: maxBatch, Do: func(ctx context.Context, as []Attempt) ([]struct{}, error) {
			if err := r.RecordAttempts(ctx, as); err != nil {
				return nil, err
			}
			return make([]struct{}, len(as)), nil
		}}
	}
	return d
}

// get reads a delivery, in a batch with those of concurrent jobs when the
// Store allows.
func (d *Deliverer) get(ctx context.Context, id string) (*Delivery, error) {
	if d.reads == nil {
		return d.store.GetDelivery(ctx, id)
	}
	del, err := d.reads.Call(ctx, id)
	if err != nil {
		return nil, err
	}
	if del == nil {
		return nil, fmt.Errorf("webhook delivery %q: %w", id, store.ErrNotFound)
	}
	return del, nil
}

// Handle delivers the delivery named by the job's args. It POSTs the body
// until the receiver answers 2xx or the attempts (1 + Retries, counted in
// Delivery.Attempts across runs) are used up; then the delivery is
// delivered or failed and Handle returns nil. Between attempts it sleeps
// the backoff, or what a 429's Retry-After asks; a wait longer than 2 s
// ends the run with jobs.Snooze instead. When ctx ends it returns ctx's
// error: the scheduler runs the job again later and it goes on from the
// stored attempt count.
func (d *Deliverer) Handle(ctx context.Context, run *jobs.Run) error {
	var args JobArgs
	if err := json.Unmarshal(run.Args, &args); err != nil || args.DeliveryID == "" {
		return jobs.Cancel(fmt.Errorf("webhooks: bad args of %s job: %q", JobKind, run.Args))
	}
	del, err := d.get(ctx, args.DeliveryID)
	if errors.Is(err, store.ErrNotFound) {
		return nil // deleted, or its transaction rolled back
	}
	if err != nil {
		return err
	}
	if del.Status != StatusPending {
		return nil
	}
	budget := 1 + d.cfg.Retries
	if del.Attempts >= budget {
		del.Status = StatusFailed
		del.UpdatedAt = d.stamp()
		return d.store.UpdateDelivery(ctx, del)
	}
	key, err := d.signingKey(ctx, del.EnvironmentID)
	if errors.Is(err, store.ErrNotFound) {
		// The environment is gone: nothing will ever deliver this.
		del.Status = StatusFailed
		del.LastError = "environment not found"
		del.UpdatedAt = d.stamp()
		return d.store.UpdateDelivery(ctx, del)
	}
	if err != nil {
		return err
	}
	for {
		res := d.attempt(ctx, del, key)
		if err := ctx.Err(); err != nil {
			if !res.ok {
				// Stopping: this attempt was cut short and does not
				// count; the job runs again later.
				return err
			}
			// Delivered just as the service stops: record it anyway so
			// that it is not sent again.
			sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
			defer cancel()
			ctx = sctx
		}
		del.Attempts++
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
		}
		// Persist, with the log entry, before sleeping, so that the count
		// survives a restart.
		if err := d.save(ctx, del, res, budget); err != nil {
			return err
		}
		if del.Status != StatusPending {
			return nil
		}
		wait := d.cfg.wait(del.Attempts)
		if res.retryAfter >= 0 {
			wait = min(res.retryAfter, d.cfg.MaxRetryAfter)
		}
		if wait > snoozeAbove {
			return jobs.Snooze(wait)
		}
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return ctx.Err()
		case <-t.C:
		}
	}
}

func (d *Deliverer) stamp() time.Time { return d.now().UTC().Truncate(time.Microsecond) }

type attemptResult struct {
	ok       bool
	status   int
	errText  string
	excerpt  string
	duration time.Duration
	// retryAfter is the wait a 429 or 503 asked for; -1 when none.
	retryAfter time.Duration
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
// hold credentials) and without request headers.
func describe(actx context.Context, err error, timeout time.Duration) string {
	if errors.Is(actx.Err(), context.DeadlineExceeded) {
		return "timeout after " + timeout.String()
	}
	if ue, ok := errors.AsType[*url.Error](err); ok {
		err = ue.Err
	}
	msg := err.Error()
	if len(msg) > 200 {
		msg = msg[:200]
	}
	return strings.ToValidUTF8(msg, "")
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

// save stores the outcome of an attempt and its log entry, in one
// transaction when there is a Transactor.
func (d *Deliverer) save(ctx context.Context, del *Delivery, res attemptResult, budget int) error {
	if d.records != nil {
		e := attemptEntry(del, res, budget)
		d.log.Stamp(e)
		// The batch's statement holds a copy: del goes on changing.
		snapshot := *del
		if _, err := d.records.Call(ctx, Attempt{Delivery: &snapshot, Entry: e}); err != nil {
			return fmt.Errorf("webhooks: record delivery attempt: %w", err)
		}
		return nil
	}
	do := func(ctx context.Context) error {
		if err := d.store.UpdateDelivery(ctx, del); err != nil {
			return err
		}
		return d.record(ctx, del, res, budget)
	}
	if d.tx != nil {
		// The outcome may be acknowledged before it is on disk: losing it
		// in a database crash only means the job runs again and the
		// receiver gets the webhook twice under the same delivery id,
		// which deliveries are anyway (at least once).
		return d.tx.WithTx(store.WithRelaxedDurability(ctx), do)
	}
	return do(ctx)
}

// record logs one attempt in the operations log.
func (d *Deliverer) record(ctx context.Context, del *Delivery, res attemptResult, budget int) error {
	if d.log == nil {
		return nil
	}
	if _, err := d.log.Record(ctx, attemptEntry(del, res, budget)); err != nil {
		return fmt.Errorf("webhooks: log delivery attempt: %w", err)
	}
	return nil
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
