package connect

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/embedauth/connect/jobs"
)

// Defaults of RetentionConfig.
const (
	// DefaultWebhookDeliveryRetention is how long a delivered or failed
	// webhook delivery is kept after its final state.
	DefaultWebhookDeliveryRetention = 30 * 24 * time.Hour
	// DefaultLogRetention is how long an operations log entry is kept.
	DefaultLogRetention = 15 * 24 * time.Hour
)

// RetentionJobKind is the Scheduler job kind that applies RetentionConfig
// (Service.Retain). Each maintenance sweep (Config.MaintenanceInterval,
// Service.Sweep) queues it; its unique key keeps one waiting or running at a
// time across the instances that share the Scheduler.
const RetentionJobKind = "connect.retention"

// retentionBatch is the number of rows one delete statement of Retain
// removes; retentionMaxBatches bounds the statements of one Retain per
// table, so that one job run stays bounded however large the backlog (the
// next sweep's run continues).
const (
	retentionBatch      = 5000
	retentionMaxBatches = 200
)

// RetentionConfig says how long the Store keeps webhook deliveries and
// operations log entries. Deletion runs as a Scheduler job (RetentionJobKind)
// that each maintenance sweep queues, on one instance at a time, in bounded
// batches.
type RetentionConfig struct {
	// WebhookDeliveries is how long a webhook delivery that was delivered
	// or failed for good is kept after that final state (its UpdatedAt),
	// listed by the deliveries API and resendable. A pending delivery is
	// never deleted; one resent is pending again and counts anew from its
	// next final state. Defaults to DefaultWebhookDeliveryRetention (30
	// days); negative keeps them forever.
	//
	// The forwarded provider webhooks of an integration may go sooner: see
	// IncomingWebhooksConfig.StorageQuota.
	WebhookDeliveries time.Duration
	// Logs is how long an operations log entry is kept after it was
	// written. Defaults to DefaultLogRetention (15 days); negative keeps
	// them forever.
	Logs time.Duration
}

// withDefaults fills the zero fields of c.
func (c RetentionConfig) withDefaults() RetentionConfig {
	if c.WebhookDeliveries == 0 {
		c.WebhookDeliveries = DefaultWebhookDeliveryRetention
	}
	if c.Logs == 0 {
		c.Logs = DefaultLogRetention
	}
	return c
}

// RetentionResult is what one Retain did.
type RetentionResult struct {
	// DeliveriesDeleted counts the webhook deliveries deleted.
	DeliveriesDeleted int
	// LogsDeleted counts the operations log entries deleted.
	LogsDeleted int
}

// Retain applies Config.Retention now: it deletes the webhook deliveries
// whose final state is older than Retention.WebhookDeliveries and the
// operations log entries older than Retention.Logs, by the Service's clock
// (Config.Now), in batches, and returns how many it deleted. One call
// deletes at most a million rows of each kind; what is left waits for the
// next. A started Service runs it as a Scheduler job (RetentionJobKind)
// that each maintenance sweep queues; call it yourself to prune at a time
// of your choosing.
func (s *Service) Retain(ctx context.Context) (RetentionResult, error) {
	var res RetentionResult
	now := s.cfg.Now().UTC()
	var err error
	if d := s.cfg.Retention.WebhookDeliveries; d > 0 {
		res.DeliveriesDeleted, err = deleteInBatches(ctx, now.Add(-d), s.store.DeleteDeliveriesBefore)
		if err != nil {
			return res, fmt.Errorf("connect: retention of webhook deliveries: %w", err)
		}
	}
	if d := s.cfg.Retention.Logs; d > 0 {
		res.LogsDeleted, err = deleteInBatches(ctx, now.Add(-d), s.store.DeleteLogsBefore)
		if err != nil {
			return res, fmt.Errorf("connect: retention of the operations log: %w", err)
		}
	}
	return res, nil
}

// deleteInBatches calls del until a batch comes back short, at most
// retentionMaxBatches times, and returns the rows deleted.
func deleteInBatches(ctx context.Context, before time.Time, del func(ctx context.Context, before time.Time, limit int) (int, error)) (int, error) {
	total := 0
	for range retentionMaxBatches {
		n, err := del(ctx, before, retentionBatch)
		total += n
		if err != nil || n < retentionBatch {
			return total, err
		}
	}
	return total, nil
}

// queueRetention queues the retention job unless retention is off, or one
// waits or runs already.
func (s *Service) queueRetention(ctx context.Context) error {
	if s.cfg.Retention.WebhookDeliveries < 0 && s.cfg.Retention.Logs < 0 {
		return nil
	}
	return s.scheduler.Enqueue(ctx, jobs.Job{Kind: RetentionJobKind, Args: json.RawMessage(`{}`), MaxAttempts: 3,
		UniqueKey: "retention", Timeout: 10 * time.Minute})
}

// handleRetentionJob runs Retain as a Scheduler job and logs what it did.
func (s *Service) handleRetentionJob(ctx context.Context, _ *jobs.Run) error {
	res, err := s.Retain(ctx)
	if res.DeliveriesDeleted > 0 || res.LogsDeleted > 0 {
		s.logger.InfoContext(ctx, "retention", "webhook_deliveries_deleted", res.DeliveriesDeleted, "logs_deleted", res.LogsDeleted)
	}
	return err
}

// checkRetention validates c.
func checkRetention(c RetentionConfig) error {
	if c.WebhookDeliveries > 0 && c.WebhookDeliveries < time.Hour || c.Logs > 0 && c.Logs < time.Hour {
		return errors.New("connect: Config.Retention periods must be at least an hour (or negative, to keep forever)")
	}
	return nil
}
