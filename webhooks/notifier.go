package webhooks

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"math/big"
	"time"

	"github.com/embedauth/connect/environments"
	"github.com/embedauth/connect/jobs"
	"github.com/embedauth/connect/oplog"
	"github.com/embedauth/connect/store"
)

// JobKind is the kind of the delivery job: it tells the Deliverers that the
// outbox has due deliveries (see Deliverer.Handle). Its args are {} (older
// versions named a delivery, {"delivery_id": "..."}; such jobs are handled
// the same way).
const JobKind = "webhook.deliver"

// jobShards is the number of distinct delivery jobs that may wait at once.
// A delivery job is unique (jobs.Job.UniqueKey): while one waits, enqueueing
// another adds nothing, so a burst of events costs the scheduler a job or
// two rather than one each. On Postgres, transactions that insert the same
// unique job take turns at commit; spreading them over a few keys keeps
// concurrent events from queueing behind each other.
const jobShards = 4

// NewJob returns a delivery job, to enqueue in the transaction that stores
// deliveries (or makes one pending again).
func NewJob() jobs.Job {
	n, _ := rand.Int(rand.Reader, big.NewInt(jobShards))
	return jobs.Job{Kind: JobKind, Args: json.RawMessage(`{}`), MaxAttempts: 3,
		UniqueKey: "outbox-" + n.String()}
}

// EnvironmentGetter finds an environment: its webhook URLs and settings.
// The environments Store (every connect.Store) implements it.
type EnvironmentGetter interface {
	GetEnvironment(ctx context.Context, id int64) (*environments.Environment, error)
}

// OverrideGetter returns the webhook URL override of a connection: empty
// when it has none, and an error matching store.ErrNotFound when the
// connection does not exist.
type OverrideGetter interface {
	WebhookURLOverride(ctx context.Context, environmentID int64, integrationKey, connectionID string) (string, error)
}

// OverrideGetterFunc adapts a function to an OverrideGetter.
type OverrideGetterFunc func(ctx context.Context, environmentID int64, integrationKey, connectionID string) (string, error)

// WebhookURLOverride calls f.
func (f OverrideGetterFunc) WebhookURLOverride(ctx context.Context, environmentID int64, integrationKey, connectionID string) (string, error) {
	return f(ctx, environmentID, integrationKey, connectionID)
}

// NotifierConfig gives a WebhookNotifier its parts. connect.New builds one
// from the Service's; a host normally has no need to.
type NotifierConfig struct {
	// Environments finds the event's environment. Required.
	Environments EnvironmentGetter
	// Overrides finds a connection's webhook URL override. Optional: nil
	// sends every webhook to the environment's URLs.
	Overrides OverrideGetter
	// Store stores the deliveries. Required.
	Store Store
	// Scheduler runs the delivery jobs (JobKind). Required.
	Scheduler jobs.Scheduler
	// Transactor makes the deliveries, their jobs and the log entry of an
	// event atomic when the caller is not in a transaction already.
	// Optional.
	Transactor store.Transactor
	// Log records an entry per event that produced deliveries, except
	// Unverified events: anyone may cause those, and the incoming webhook
	// handler's entry of the delivery (sampled: see
	// IncomingConfig.Sampler) says how many forwards it queued. Optional.
	Log *oplog.Writer
	// From is the "from" of the bodies; defaults to DefaultFrom.
	From string
	// Now stamps the deliveries' CreatedAt; defaults to time.Now. (Their
	// NextAttemptAt is on the real clock: see DelivererConfig.Now.)
	Now func() time.Time
}

// WebhookNotifier is the default Notifier: it turns an event into one
// Delivery per destination URL, stored in the outbox (Store) together with a
// delivery job, in the caller's transaction.
type WebhookNotifier struct {
	cfg NotifierConfig
}

var _ Notifier = (*WebhookNotifier)(nil)

// NewNotifier returns a WebhookNotifier.
func NewNotifier(cfg NotifierConfig) *WebhookNotifier {
	if cfg.From == "" {
		cfg.From = DefaultFrom
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	return &WebhookNotifier{cfg: cfg}
}

// Enabled reports whether the settings let an event through: auth creation
// and override need SendAuthCreation, auth refresh SendAuthRefreshError, a
// sync SendSync (and SendEmptySync when it changed nothing), an async action
// SendAsyncAction and a forwarded webhook SendForward. Other types and auth
// operations are always sent.
func Enabled(s environments.WebhookSettings, e Event) bool {
	switch e.Type {
	case TypeAuth:
		switch e.Operation {
		case OperationCreation, OperationOverride:
			return s.SendAuthCreation
		case OperationRefresh:
			return s.SendAuthRefreshError
		}
	case TypeSync:
		return s.SendSync && (!e.Empty || s.SendEmptySync)
	case TypeAsyncAction:
		return s.SendAsyncAction
	case TypeForward:
		return s.SendForward
	}
	return true
}

// Destinations returns the URLs that receive a webhook: the override alone
// when it is set, else the environment's URLs.
func Destinations(envURLs []string, override string) []string {
	if override != "" {
		return []string{override}
	}
	return append([]string(nil), envURLs...)
}

// Notify stores one pending Delivery per destination of e and enqueues a
// delivery job, using ctx so that with a context from Store.WithTx they
// exist if and only if that transaction commits. An event
// disabled by the environment's settings, or with no destination, is
// dropped without error. The deliveries of an Unverified event are marked
// Unverified, and it gets no log entry (see NotifierConfig.Log).
func (n *WebhookNotifier) Notify(ctx context.Context, e Event) error {
	cfg := n.cfg
	if cfg.Environments == nil || cfg.Store == nil || cfg.Scheduler == nil {
		return errors.New("webhooks: NotifierConfig needs Environments, Store and Scheduler")
	}
	if e.Type == "" {
		return errors.New("webhooks: event has no type")
	}
	env, err := cfg.Environments.GetEnvironment(ctx, e.EnvironmentID)
	if err != nil {
		return fmt.Errorf("webhooks: environment %d: %w", e.EnvironmentID, err)
	}
	if !Enabled(env.WebhookSettings, e) {
		return nil
	}
	override := ""
	if e.ConnectionID != "" && cfg.Overrides != nil {
		override, err = cfg.Overrides.WebhookURLOverride(ctx, e.EnvironmentID, e.IntegrationKey, e.ConnectionID)
		if err != nil && !errors.Is(err, store.ErrNotFound) {
			return fmt.Errorf("webhooks: connection %q: %w", e.ConnectionID, err)
		}
	}
	urls := Destinations(env.WebhookURLs, override)
	if len(urls) == 0 {
		return nil
	}
	payload, err := prepare(e.Payload, e.Type, cfg.From)
	if err != nil {
		return err
	}
	body, err := Canonical(payload)
	if err != nil {
		return fmt.Errorf("webhooks: body of %s webhook: %w", e.Type, err)
	}
	now := cfg.Now().UTC().Truncate(time.Microsecond)
	eventID := NewID()
	ds := make([]*Delivery, len(urls))
	ids := make([]string, len(urls))
	for i, u := range urls {
		ds[i] = &Delivery{
			ID:             NewID(),
			EnvironmentID:  e.EnvironmentID,
			EventID:        eventID,
			Type:           e.Type,
			IntegrationKey: e.IntegrationKey,
			ConnectionID:   e.ConnectionID,
			URL:            u,
			Body:           body,
			Status:         StatusPending,
			CreatedAt:      now,
			UpdatedAt:      now,
			NextAttemptAt:  schedNow(),
			Unverified:     e.Unverified,
		}
		ids[i] = ds[i].ID
	}
	do := func(ctx context.Context) error {
		if err := cfg.Store.CreateDeliveries(ctx, ds...); err != nil {
			return fmt.Errorf("webhooks: store deliveries: %w", err)
		}
		if err := cfg.Scheduler.Enqueue(ctx, NewJob()); err != nil {
			return fmt.Errorf("webhooks: enqueue deliveries: %w", err)
		}
		if cfg.Log != nil && !e.Unverified {
			return n.record(ctx, e, eventID, ids, urls)
		}
		return nil
	}
	if cfg.Transactor != nil {
		return cfg.Transactor.WithTx(ctx, do)
	}
	return do(ctx)
}

// record writes the log entry of an event that produced deliveries.
func (n *WebhookNotifier) record(ctx context.Context, e Event, eventID string, ids, urls []string) error {
	msg := fmt.Sprintf("%s webhook queued for %d destination(s)", e.Type, len(urls))
	if e.Operation != "" {
		msg = fmt.Sprintf("%s (%s) webhook queued for %d destination(s)", e.Type, e.Operation, len(urls))
	}
	meta := map[string]any{"event_id": eventID, "webhook_type": e.Type, "delivery_ids": ids, "urls": redactAll(urls)}
	if e.Operation != "" {
		meta["operation"] = e.Operation
	}
	if _, err := n.cfg.Log.Record(ctx, &oplog.Entry{
		EnvironmentID:  e.EnvironmentID,
		Type:           "webhook",
		Operation:      "enqueue",
		IntegrationKey: e.IntegrationKey,
		ConnectionID:   e.ConnectionID,
		Message:        msg,
		Meta:           meta,
	}); err != nil {
		return fmt.Errorf("webhooks: log: %w", err)
	}
	return nil
}

// NewID returns a random id (a version 4 UUID), as used for deliveries and
// events.
func NewID() string {
	var b [16]byte
	rand.Read(b[:])
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	return fmt.Sprintf("%x-%x-%x-%x-%x", b[0:4], b[4:6], b[6:8], b[8:10], b[10:16])
}

func redactAll(urls []string) []string {
	out := make([]string, len(urls))
	for i, u := range urls {
		out[i] = redactURL(u)
	}
	return out
}
