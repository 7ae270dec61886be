package functions

import (
	"context"
	"time"
)

// RecordScope identifies the records of one model of one sync variant of
// one connection: what a sync saves, GET /records lists and retention
// prunes. Records are keyed by the connection's row (Connection.ID), not
// its connection id, so that a connection deleted and created again under
// the same id starts without the old one's records.
type RecordScope struct {
	EnvironmentID int64
	// ConnectionID is the connection's Connection.ID (the row's id).
	ConnectionID int64
	Model        string
	// Variant is the sync variant; BaseVariant for the base one.
	Variant string
}

// BaseVariant is the variant of a sync that has none.
const BaseVariant = "base"

// RecordWrite is one record that RecordStore.SaveRecords writes. The
// Service seals the payload before it reaches the Store.
type RecordWrite struct {
	// ID is the record's id: 1 to MaxRecordIDLen characters.
	ID string
	// SealedPayload is the record's JSON object, sealed (store.SealedKeyID
	// names its key).
	SealedPayload string
	// Hash identifies the plaintext payload: equal hashes mean equal
	// payloads (see HashPayload).
	Hash string
}

// Record is a stored record.
type Record struct {
	ID string
	// SealedPayload is empty once the payload was pruned.
	SealedPayload string
	Hash          string
	// FirstSeenAt is when the record was added (again, after a deletion).
	FirstSeenAt time.Time
	// UpdatedAt is when it was last added, changed or deleted.
	UpdatedAt time.Time
	DeletedAt *time.Time
	PrunedAt  *time.Time
	// Seq orders the records of a scope by their last change: every
	// write that adds, changes or deletes a record gives it a Seq above
	// every other of its scope. The writes of a scope are serialised, so a
	// reader that has seen Seq n has seen every committed change below n:
	// GET /records' cursor is a Seq.
	Seq int64
}

// LastAction is ADDED, UPDATED or DELETED: how the record last changed.
func (r *Record) LastAction() string {
	switch {
	case r.DeletedAt != nil:
		return ActionDeleted
	case r.FirstSeenAt.Equal(r.UpdatedAt):
		return ActionAdded
	default:
		return ActionUpdated
	}
}

// The values of a record's last action.
const (
	ActionAdded   = "ADDED"
	ActionUpdated = "UPDATED"
	ActionDeleted = "DELETED"
)

// SaveResult counts what a RecordStore write changed.
type SaveResult struct {
	Added, Updated, Deleted int
}

// RecordFilter selects records by last action (any of the set bits); zero
// selects every record.
type RecordFilter uint8

// The bits of a RecordFilter.
const (
	FilterAdded RecordFilter = 1 << iota
	FilterUpdated
	FilterDeleted
)

// RecordQuery selects a page of a scope's records, in Seq order.
type RecordQuery struct {
	// AfterSeq starts the page after this Seq (0: from the start).
	AfterSeq int64
	// ModifiedAfter, when set, keeps the records with UpdatedAt at or after
	// it.
	ModifiedAfter *time.Time
	Filter        RecordFilter
	// IDs, when set, keeps the records with these ids.
	IDs []string
	// Limit is the page size: 1 to MaxRecordsPageLimit.
	Limit int
}

// RecordStore holds sync records. Every write of a scope is serialised
// with the others of that scope (a lock of the scope, held until the
// transaction ends), so that Seq order is commit order within a scope.
// Writes are all or none. Times are given by the caller (now) so that the
// Service's clock decides them.
type RecordStore interface {
	// SaveRecords upserts recs, whose ids are distinct. An id not stored,
	// or stored deleted, is added: FirstSeenAt and UpdatedAt now,
	// DeletedAt and PrunedAt cleared. A stored one with another Hash, or
	// pruned, is updated: payload, hash, UpdatedAt now, PrunedAt cleared.
	// A stored one with the same Hash that is neither deleted nor pruned is
	// unchanged and not counted. Every added or updated record gets a new
	// Seq. When touch is not zero, every record of recs, unchanged ones
	// included, is marked as touched at generation touch (see
	// DeleteUntouched).
	SaveRecords(ctx context.Context, scope RecordScope, recs []RecordWrite, now time.Time, touch int64) (SaveResult, error)
	// UnchangedRecords returns the ids of those of recs (distinct ids;
	// SealedPayload is not read) that SaveRecords would leave unchanged:
	// stored with the same Hash, neither deleted nor pruned. When touch is
	// not zero it marks them touched at generation touch, as SaveRecords
	// would, so that they need not be saved. The Service asks before it
	// seals a batch that is likely unchanged (a sync run again over the
	// same data), and seals and saves only the others.
	UnchangedRecords(ctx context.Context, scope RecordScope, recs []RecordWrite, touch int64) ([]string, error)
	// DeleteRecords soft-deletes the records with ids that are stored and
	// not deleted: DeletedAt and UpdatedAt now (the payload stays), a new
	// Seq. Others are ignored. It counts Deleted.
	DeleteRecords(ctx context.Context, scope RecordScope, ids []string, now time.Time) (SaveResult, error)
	// GetRecords returns the records with these ids that are stored and
	// not deleted, in no particular order.
	GetRecords(ctx context.Context, scope RecordScope, ids []string) ([]*Record, error)
	// ListRecords returns up to q.Limit records of the scope matching q,
	// by ascending Seq, deleted ones included unless q.Filter excludes
	// them.
	ListRecords(ctx context.Context, scope RecordScope, q RecordQuery) ([]*Record, error)
	// CountRecords returns how many records of the scope are not deleted.
	CountRecords(ctx context.Context, scope RecordScope) (int, error)
	// PruneRecords empties the payload (PrunedAt now) of up to limit
	// records of the scope that are not pruned, by ascending Seq, up to
	// and including Seq untilSeq. It returns how many it pruned and the
	// Seq of the last. Pruning changes neither UpdatedAt nor Seq.
	PruneRecords(ctx context.Context, scope RecordScope, untilSeq int64, limit int, now time.Time) (n int, last int64, err error)
	// DeleteUntouched soft-deletes, as DeleteRecords does, up to limit
	// records of the scope that are not deleted and were not touched at
	// generation since or later (SaveRecords' touch), and returns their
	// ids.
	DeleteUntouched(ctx context.Context, scope RecordScope, since int64, limit int, now time.Time) ([]string, error)
	// DeleteAllRecords hard-deletes up to limit records of the scope and
	// returns how many it deleted (0 when none is left).
	DeleteAllRecords(ctx context.Context, scope RecordScope, limit int) (int, error)
	// PruneStaleRecords empties the payload of up to limit records, of
	// every scope, not updated since before and not pruned, and returns how
	// many it pruned (retention).
	PruneStaleRecords(ctx context.Context, before time.Time, limit int, now time.Time) (int, error)
	// DeleteOrphanRecords hard-deletes up to limit records whose
	// connection no longer exists, and returns how many it deleted.
	DeleteOrphanRecords(ctx context.Context, limit int) (int, error)
}

// Limits of records.
const (
	// MaxRecordIDLen is the longest record id, in characters.
	MaxRecordIDLen = 255
	// MaxRecordsPerBatch is the most records one save, update or delete
	// call writes.
	MaxRecordsPerBatch = 1000
	// MaxRecordsPageLimit is the largest page of GET /records.
	MaxRecordsPageLimit = 10000
	// DefaultRecordsPageLimit is the page size of GET /records without a
	// limit.
	DefaultRecordsPageLimit = 100
)
