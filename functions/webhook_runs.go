package functions

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/embedauth/connect/connections"
	"github.com/embedauth/connect/jobs"
	"github.com/embedauth/connect/store"
	"github.com/embedauth/connect/webhooks"
)

// The triggers of a SyncRun.
const (
	TriggerSchedule = "schedule"
	TriggerManual   = "manual"
	// TriggerWebhook is a run of a sync's webhook handler for a provider
	// webhook (RunWebhookSyncs).
	TriggerWebhook = "webhook"
)

// DefaultMaxWebhookPayload is the default Config.MaxWebhookPayload: 1 MiB,
// the default limit of an incoming webhook's body.
const DefaultMaxWebhookPayload = webhooks.DefaultIncomingMaxBody

// ErrNoWebhookHandler is the error a Runtime returns (wrapped or not) from
// RunSync with a webhook payload for a sync that has no webhook handler:
// the run stops with the failure type "webhook_handler_missing".
var ErrNoWebhookHandler = errors.New("functions: the sync has no webhook handler")

// SubscriptionMatches reports whether a sync's webhook subscriptions
// match a provider webhook of type typ: one of them is "*" or equals typ
// (an empty type matches only "*").
func SubscriptionMatches(subscriptions []string, typ string) bool {
	for _, s := range subscriptions {
		if s == "*" || (typ != "" && s == typ) {
			return true
		}
	}
	return false
}

// RunWebhookSyncs queues the webhook runs that provider webhooks routed to
// connections of an integration trigger, as Nango does: for each routed
// webhook and each enabled sync of the integration whose
// WebhookSubscriptions match its type (see SubscriptionMatches), one run
// of the sync's webhook handler (Sync.OnWebhook; Runtime.RunSync with the
// payload) on the connection's base variant. Each run is a SyncRun of
// trigger "webhook" and type INCREMENTAL, stored with its Scheduler job,
// whose arguments hold the payload, in one transaction (the caller's when
// ctx carries one): it runs in the background and survives a restart. It
// runs whether the sync's schedule is paused or not, as in Nango, and
// apart from the schedule's runs (see the package documentation). A
// connection that does not exist, or has no base schedule of a sync, gets
// no run. A payload larger than Config.MaxWebhookPayload is not stored:
// its runs are stored as failed (payload_too_large), with their failure
// webhooks. It returns how many runs it queued or stored as failed.
// *Service implements webhooks.SyncRunner with it.
func (s *Service) RunWebhookSyncs(ctx context.Context, env int64, integration string, routed []webhooks.RoutedWebhook) (int, error) {
	if len(routed) == 0 {
		return 0, nil
	}
	if err := s.deploy(ctx, env, integration); err != nil {
		return 0, err
	}
	fns, err := s.st.ListFunctions(ctx, env, integration)
	if err != nil {
		return 0, err
	}
	var subscribed []*Function
	for _, f := range fns {
		if f.Kind == KindSync && f.Enabled && len(f.Definition.WebhookSubscriptions) > 0 {
			subscribed = append(subscribed, f)
		}
	}
	if len(subscribed) == 0 {
		return 0, nil
	}
	if s.cfg.Scheduler == nil {
		return 0, errors.New("functions: the Service has no Scheduler")
	}
	n := 0
	err = s.st.WithTx(ctx, func(ctx context.Context) error {
		n = 0
		conns := map[string]*connections.Connection{}
		for _, w := range routed {
			c, ok := conns[w.ConnectionID]
			if !ok {
				var err error
				c, err = s.st.GetConnection(ctx, env, integration, w.ConnectionID)
				if errors.Is(err, store.ErrNotFound) {
					c = nil
				} else if err != nil {
					return err
				}
				conns[w.ConnectionID] = c
			}
			if c == nil {
				continue
			}
			for _, f := range subscribed {
				if !SubscriptionMatches(f.Definition.WebhookSubscriptions, w.Type) {
					continue
				}
				sc, err := s.st.GetSync(ctx, c.ID, f.Name, BaseVariant)
				if errors.Is(err, store.ErrNotFound) {
					continue
				}
				if err != nil {
					return err
				}
				if err := s.queueWebhookRun(ctx, sc, f, w); err != nil {
					return err
				}
				n++
			}
		}
		return nil
	})
	if err != nil {
		return 0, err
	}
	return n, nil
}

// queueWebhookRun stores a webhook run of sc and its job, in the
// transaction of ctx; a payload over the limit is stored as a failed run.
func (s *Service) queueWebhookRun(ctx context.Context, sc *Schedule, f *Function, w webhooks.RoutedWebhook) error {
	now := s.nowUTC()
	r := &SyncRun{ID: newUUID(), SyncID: sc.ID, Status: RunQueued, Type: "INCREMENTAL", Trigger: TriggerWebhook, CreatedAt: now}
	if err := s.st.CreateSyncRun(ctx, r); err != nil {
		return err
	}
	payload := w.Payload
	if len(payload) == 0 {
		payload = json.RawMessage("null")
	}
	if len(payload) > s.cfg.MaxWebhookPayload {
		st := &runStatus{run: r, sched: sc, fn: f}
		return s.finishRun(ctx, st, false, runFailure("payload_too_large",
			fmt.Sprintf("The provider webhook (%s) is %d bytes: more than the %d bytes a webhook run may hold; the sync's webhook handler did not run.",
				typeLabel(w.Type), len(payload), s.cfg.MaxWebhookPayload)))
	}
	b, err := json.Marshal(syncJobArgs{RunID: r.ID, Webhook: []byte(payload), WebhookType: w.Type})
	if err != nil {
		return err
	}
	return s.cfg.Scheduler.Enqueue(ctx, jobs.Job{Kind: SyncJobKind, Args: b, MaxAttempts: 1,
		Timeout: s.cfg.SyncTimeout + time.Minute})
}

func typeLabel(t string) string {
	if t == "" {
		return "no type"
	}
	return fmt.Sprintf("type %q", t)
}

// touchSchedule writes the row of the schedule with id (its UpdatedAt),
// in the transaction of ctx, again when a concurrent change made the
// version read stale: a webhook run starting does, so that retention,
// which writes the row before it deletes a stale sync's records, either
// sees the run or deletes them before it starts (see deleteSyncRecords).
func (s *Service) touchSchedule(ctx context.Context, id string) error {
	var err error
	for range 5 {
		var sc *Schedule
		sc, err = s.st.GetSyncByID(ctx, id)
		if err != nil {
			return err
		}
		sc.UpdatedAt = s.nowUTC()
		err = s.st.UpdateSync(ctx, sc)
		if !errors.Is(err, store.ErrConflict) {
			return err
		}
	}
	return err
}

// checkWebhookSubscriptions checks a sync's webhook subscriptions.
func checkWebhookSubscriptions(subs []string) error {
	for _, s := range subs {
		if s == "" {
			return errors.New("WebhookSubscriptions: an empty subscription (use \"*\" for every type)")
		}
	}
	if i := slices.IndexFunc(subs, func(s string) bool { return len(s) > 255 }); i >= 0 {
		return fmt.Errorf("WebhookSubscriptions: %q is longer than 255 characters", subs[i][:32]+"…")
	}
	return nil
}
