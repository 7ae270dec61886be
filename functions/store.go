package functions

import (
	"context"
	"encoding/json"
	"time"
)

// Store holds what the functions of a Service need: deployed functions,
// sync schedules and runs, checkpoints, async action tasks and records.
// store/sqlite and store/postgres implement it; store/storetest checks it.
type Store interface {
	FunctionStore
	SyncStore
	CheckpointStore
	ActionStore
	RecordStore
}

// Kind is the type of a function.
type Kind string

// The kinds of functions.
const (
	KindSync    Kind = "sync"
	KindAction  Kind = "action"
	KindOnEvent Kind = "on-event"
)

// Function is a function deployed to an integration of an environment:
// registered in Go by the host (Runtime "go") or deployed at run time.
// It is identified by (EnvironmentID, Integration, Kind, Name).
type Function struct {
	ID            int64
	EnvironmentID int64
	// Integration is the integration's unique key.
	Integration string
	Kind        Kind
	Name        string
	// Runtime names what runs the code: "go" for functions registered
	// in Go.
	Runtime string
	// Version is the definition's version: the one given, or a counter
	// the Store bumps when the definition changes without one.
	Version string
	// Source is a label of where the code comes from (for Go functions,
	// the host's label).
	Source  string
	Enabled bool
	// Definition is everything else about the function, stored as JSON.
	Definition Definition
	// Code is the deployed code of runtimes that run stored code (empty
	// for Go functions).
	Code []byte
	// SourceCode is the source the code was built from, when the deployer
	// sent it: the TypeScript entry file of a function deployed with the
	// nango CLI (what GET .../code answers and nango pull writes). Empty
	// for Go functions.
	SourceCode []byte
	// SDKVersion is the version of the SDK the code was built with (the
	// nango CLI's sdkVersion, such as "0.71.10-zero"); empty for Go
	// functions.
	SDKVersion string
	// DeployedAt is when the current definition was deployed
	// (last_deployed); UpdatedAt when the row last changed.
	DeployedAt time.Time
	UpdatedAt  time.Time
}

// Definition is the runtime-independent description of a function.
type Definition struct {
	Description string `json:"description,omitempty"`
	// Runs is a sync's frequency, normalised (see ParseFrequency).
	Runs         string `json:"runs,omitempty"`
	AutoStart    bool   `json:"auto_start,omitempty"`
	TrackDeletes bool   `json:"track_deletes,omitempty"`
	// SyncType is "full" or "incremental" (deprecated in Nango).
	SyncType string `json:"sync_type,omitempty"`
	// Models are a sync's output models, or an action's output model.
	Models []Model `json:"models,omitempty"`
	// Input names the input model (actions; a sync's metadata model).
	Input string `json:"input,omitempty"`
	// JSONSchema is one JSON Schema document whose definitions are the
	// models, the input and the output.
	JSONSchema           json.RawMessage `json:"json_schema,omitempty"`
	Scopes               []string        `json:"scopes,omitempty"`
	Endpoints            []Endpoint      `json:"endpoints,omitempty"`
	Event                Event           `json:"event,omitempty"`
	WebhookSubscriptions []string        `json:"webhook_subscriptions,omitempty"`
	Attributes           map[string]any  `json:"attributes,omitempty"`
	Features             []string        `json:"features,omitempty"`
}

// Model is a named record shape with its JSON Schema.
type Model struct {
	Name   string          `json:"name"`
	Schema json.RawMessage `json:"schema,omitempty"`
}

// Endpoint is an HTTP endpoint a function documents (Nango's endpoints).
type Endpoint struct {
	Method string `json:"method"`
	Path   string `json:"path"`
	Group  string `json:"group,omitempty"`
}

// Event names what an on-event function runs on.
type Event string

// The events of on-event functions.
const (
	EventPostConnectionCreation Event = "post-connection-creation"
	EventPreConnectionDeletion  Event = "pre-connection-deletion"
	EventValidateConnection     Event = "validate-connection"
)

// FunctionStore holds deployed functions, and the versions they had
// before their current one.
type FunctionStore interface {
	// PutFunction creates f, or replaces the function of its identity.
	// When one is stored with the same Runtime, Version (an empty
	// f.Version matches any), Source, Code, SourceCode, SDKVersion and
	// Definition (compared as JSON), nothing changes and changed is false.
	// Otherwise the stored one is replaced, keeping its ID and Enabled,
	// with DeployedAt and UpdatedAt set to f.DeployedAt, and the replaced
	// one is added to the function's versions (ListFunctionVersions) in
	// the same transaction; a new one gets an ID, Enabled true and both
	// times from f.DeployedAt. An empty f.Version becomes "1" for a new
	// function and, for a changed one, the stored version with its last
	// number plus one when it is numbers separated by dots ("7" is "8",
	// "1.0.9" is "1.0.10"), else the stored version. A function
	// registered in Go (Runtime GoRuntime) is never replaced by one of
	// another runtime, nor the reverse: that is ErrConflict, and nothing
	// changes. f is set to what is stored.
	PutFunction(ctx context.Context, f *Function) (changed bool, err error)
	// GetFunction returns the function of an identity, or ErrNotFound.
	GetFunction(ctx context.Context, environmentID int64, integration string, kind Kind, name string) (*Function, error)
	// ListFunctions returns the functions of an environment, of one
	// integration when integration is not empty, ordered by integration,
	// kind, then name.
	ListFunctions(ctx context.Context, environmentID int64, integration string) ([]*Function, error)
	// DeleteFunction deletes the function of an identity, with its
	// syncs (for a sync: every schedule of every connection, variants
	// included, and their runs), or returns ErrNotFound. The deleted
	// function is added to its versions, which stay.
	DeleteFunction(ctx context.Context, environmentID int64, integration string, kind Kind, name string) error
	// SetFunctionEnabled sets Enabled, or returns ErrNotFound.
	SetFunctionEnabled(ctx context.Context, environmentID int64, integration string, kind Kind, name string, enabled bool) error
	// ListFunctionVersions returns the versions a function of an identity
	// had before its current one (replaced by PutFunction, or deleted),
	// newest first: at most FunctionVersionsKept, the older ones are
	// deleted as newer ones are added. None is no error. They go with
	// the integration, as functions do.
	ListFunctionVersions(ctx context.Context, environmentID int64, integration string, kind Kind, name string) ([]*FunctionVersion, error)
}

// FunctionVersionsKept is how many earlier versions of a function a
// FunctionStore keeps.
const FunctionVersionsKept = 20

// FunctionVersion is a version a function had: its identity and what
// PutFunction compares.
type FunctionVersion struct {
	EnvironmentID int64
	Integration   string
	Kind          Kind
	Name          string
	Version       string
	Runtime       string
	Source        string
	SDKVersion    string
	Definition    Definition
	Code          []byte
	SourceCode    []byte
	// DeployedAt is when this version was deployed.
	DeployedAt time.Time
}

// DeployLocker is implemented by a Store that can refuse a second
// deployment of an environment while one is in progress in another
// process (the Postgres store, with a transaction-level advisory lock).
// A Store without it relies on the Service's own lock, which holds
// within one process, and on its transactions (SQLite runs one writing
// transaction at a time, so deployments through several processes on
// one file run one after the other).
type DeployLocker interface {
	// TryLockDeploy takes the deployment lock of an environment until the
	// transaction of ctx ends, and reports false, without waiting, when
	// another transaction holds it. It must be called inside WithTx.
	TryLockDeploy(ctx context.Context, environmentID int64) (bool, error)
}

// Schedule is the schedule of one sync function for one connection and
// variant: a "sync" in Nango's terms (the SyncStore's methods keep that
// name). It is identified by ID, and by (ConnectionID, Name, Variant).
type Schedule struct {
	// ID is a random UUID.
	ID            string
	EnvironmentID int64
	// ConnectionID is the connection's Connection.ID (row id);
	// Integration and ConnectionRef its integration key and connection
	// id, which do not change.
	ConnectionID  int64
	Integration   string
	ConnectionRef string
	Name          string
	// Variant is BaseVariant or a variant's name.
	Variant string
	// Frequency is the per-connection override (normalised), or empty
	// for the function's Runs.
	Frequency string
	// Interval is the effective interval between runs.
	Interval time.Duration
	// Paused stops scheduled runs (a running one finishes).
	Paused bool
	// NextRunAt is when the next scheduled run is due; nil while paused.
	NextRunAt *time.Time
	// LastSyncDate is the start of the last successful run; nil before the
	// first and after a reset.
	LastSyncDate *time.Time
	// RunID is the run that is queued or running, empty when none.
	RunID     string
	CreatedAt time.Time
	UpdatedAt time.Time
	// Version counts the changes of the row; UpdateSync compares it.
	Version int64
}

// The statuses of a SyncRun.
const (
	RunQueued  = "QUEUED"
	RunRunning = "RUNNING"
	RunSuccess = "SUCCESS"
	// RunStopped is a run that failed, timed out, was cancelled or was
	// interrupted (its instance died): Nango's STOPPED.
	RunStopped = "STOPPED"
)

// ModelResult counts the changes of one model in a run.
type ModelResult struct {
	Added   int `json:"added"`
	Updated int `json:"updated"`
	Deleted int `json:"deleted"`
}

// SyncRun is one run of a Schedule.
type SyncRun struct {
	// ID is a random UUID.
	ID     string
	SyncID string
	// Status is RunQueued, RunRunning, RunSuccess or RunStopped.
	Status string
	// Type is "INITIAL" (no earlier successful run) or "INCREMENTAL".
	Type string
	// Trigger is "schedule", "manual" or "webhook".
	Trigger string
	// Reset and EmptyCache are the options of a manual trigger.
	Reset      bool
	EmptyCache bool
	// LogID is the run's operations log entry.
	LogID      string
	CreatedAt  time.Time
	StartedAt  *time.Time
	FinishedAt *time.Time
	// HeartbeatAt is refreshed while the run runs; a RUNNING run whose
	// heartbeat is old has lost its instance.
	HeartbeatAt *time.Time
	// CancelRequested asks the instance running it to stop it.
	CancelRequested bool
	// Supersedes is the run this one replaced (a reset of a running
	// sync): this one starts once that one has finished. Empty for most.
	Supersedes string
	// Result counts the changes per model.
	Result map[string]ModelResult
	// CheckpointFrom and CheckpointTo are the checkpoint first read and
	// last written (JSON objects), nil when the run did not touch them;
	// CheckpointsTouched says whether it did.
	CheckpointFrom     json.RawMessage
	CheckpointTo       json.RawMessage
	CheckpointsTouched bool
	// Error describes a stopped run: a JSON object {type, description,
	// payload?}.
	Error   json.RawMessage
	Version int64
}

// SyncFilter selects syncs. Zero fields match anything but EnvironmentID,
// which is required.
type SyncFilter struct {
	EnvironmentID int64
	Integration   string
	// ConnectionID is a connection's row id.
	ConnectionID int64
	Name         string
	// Variant matches exactly when set.
	Variant string
	Limit   int
	// AfterID continues a listing after this ID (syncs are listed by
	// ID).
	AfterID string
}

// SyncStore holds syncs (Schedules) and their runs.
type SyncStore interface {
	// CreateSyncs creates the syncs that do not exist yet (by
	// ConnectionID, Name, Variant) and leaves the others as they are. It
	// sets ID, CreatedAt, UpdatedAt and Version of the syncs it created
	// (from their CreatedAt, which the caller sets) and returns how many
	// it created.
	CreateSyncs(ctx context.Context, syncs []*Schedule) (int, error)
	// GetSync returns a sync by identity, or ErrNotFound.
	GetSync(ctx context.Context, connectionID int64, name, variant string) (*Schedule, error)
	// GetSyncByID returns a sync by ID, or ErrNotFound.
	GetSyncByID(ctx context.Context, id string) (*Schedule, error)
	// ListSyncs returns the syncs matching f, by ID.
	ListSyncs(ctx context.Context, f SyncFilter) ([]*Schedule, error)
	// UpdateSync replaces the mutable fields (Frequency, Interval, Paused,
	// NextRunAt, LastSyncDate, RunID, UpdatedAt) of the sync with s.ID when
	// its stored Version equals s.Version, then sets s.Version to the next
	// one. A stale version is ErrConflict; a missing sync ErrNotFound.
	UpdateSync(ctx context.Context, s *Schedule) error
	// DeleteSync deletes a sync and its runs, or returns ErrNotFound.
	DeleteSync(ctx context.Context, id string) error
	// CountSyncVariants counts the syncs of a connection and sync name
	// whose variant is not BaseVariant.
	CountSyncVariants(ctx context.Context, connectionID int64, name string) (int, error)
	// ClaimDueSyncs locks up to limit syncs that are not paused, have no
	// RunID and whose NextRunAt is at or before now, skipping those locked
	// by another transaction, and returns them. It must run in a
	// transaction (WithTx): the caller creates their runs and updates them
	// before it commits, so no other instance claims them meanwhile.
	ClaimDueSyncs(ctx context.Context, now time.Time, limit int) ([]*Schedule, error)

	// CreateSyncRun stores a new run (ID set by the caller).
	CreateSyncRun(ctx context.Context, r *SyncRun) error
	// GetSyncRun returns a run, or ErrNotFound.
	GetSyncRun(ctx context.Context, id string) (*SyncRun, error)
	// UpdateSyncRun replaces the mutable fields of the run with r.ID
	// (everything but ID, SyncID, Trigger, CreatedAt) when its stored
	// Version equals r.Version, then sets r.Version to the next one. A
	// stale version is ErrConflict.
	UpdateSyncRun(ctx context.Context, r *SyncRun) error
	// LatestSyncRuns returns the latest run (by CreatedAt, then ID) of
	// each of the syncs, by sync ID; a sync without runs is absent.
	LatestSyncRuns(ctx context.Context, syncIDs []string) (map[string]*SyncRun, error)
	// LatestFinishedSyncRuns is LatestSyncRuns among the runs that
	// finished (SUCCESS or STOPPED).
	LatestFinishedSyncRuns(ctx context.Context, syncIDs []string) (map[string]*SyncRun, error)
	// StaleSyncRuns returns up to limit runs that are RUNNING with a
	// HeartbeatAt before before, or QUEUED with a CreatedAt before
	// before: runs whose instance died.
	StaleSyncRuns(ctx context.Context, before time.Time, limit int) ([]*SyncRun, error)
	// DeleteSyncRunsBefore deletes up to limit finished runs that
	// finished before before and are not the latest finished run of
	// their sync, and returns how many (retention).
	DeleteSyncRunsBefore(ctx context.Context, before time.Time, limit int) (int, error)
}

// StoredCheckpoint is a checkpoint as stored.
type StoredCheckpoint struct {
	// Value is a JSON object (see Checkpoint).
	Value json.RawMessage
	// Version counts its writes, from 1.
	Version   int64
	UpdatedAt time.Time
}

// CheckpointStore holds checkpoints: per connection (row id) and key
// (such as "sync:issues:base"), versioned.
type CheckpointStore interface {
	// GetCheckpoint returns a checkpoint, or ErrNotFound.
	GetCheckpoint(ctx context.Context, connectionID int64, key string) (*StoredCheckpoint, error)
	// PutCheckpoint writes a checkpoint when its stored version is
	// expected (0: none is stored) and returns the new version; otherwise
	// it returns ErrConflict and writes nothing.
	PutCheckpoint(ctx context.Context, connectionID int64, key string, value json.RawMessage, expected int64, now time.Time) (int64, error)
	// DeleteCheckpoint deletes a checkpoint when its stored version is
	// expected (0: any); a stale version is ErrConflict, a missing
	// checkpoint is no error.
	DeleteCheckpoint(ctx context.Context, connectionID int64, key string, expected int64) error
	// DeleteCheckpoints deletes every checkpoint of the connection whose
	// key starts with prefix, and returns how many.
	DeleteCheckpoints(ctx context.Context, connectionID int64, prefix string) (int, error)
}

// The statuses of an ActionTask.
const (
	TaskPending   = "PENDING"
	TaskRunning   = "RUNNING"
	TaskSucceeded = "SUCCEEDED"
	TaskFailed    = "FAILED"
)

// ActionTask is an action triggered asynchronously: stored with the
// Scheduler's job in one transaction, run by the job, its outcome kept
// for GET /action/{id}.
type ActionTask struct {
	// ID is a random UUID.
	ID            string
	EnvironmentID int64
	ConnectionID  int64
	Integration   string
	ConnectionRef string
	ActionName    string
	// SealedInput is the input JSON, sealed.
	SealedInput string
	Status      string
	// Attempts counts the runs started; MaxRetries is how many runs may
	// follow a failed first one (0 to 5).
	Attempts   int
	MaxRetries int
	// SealedOutput is the output JSON of a succeeded task, sealed;
	// SealedError the error body of a failed one, sealed.
	SealedOutput string
	SealedError  string
	// ErrorStatus is the HTTP status of a failed task's error body.
	ErrorStatus int
	LogID       string
	CreatedAt   time.Time
	UpdatedAt   time.Time
	FinishedAt  *time.Time
	Version     int64
}

// ActionStore holds async action tasks.
type ActionStore interface {
	// CreateActionTask stores a new task (ID set by the caller).
	CreateActionTask(ctx context.Context, t *ActionTask) error
	// GetActionTask returns a task of the environment, or ErrNotFound.
	GetActionTask(ctx context.Context, environmentID int64, id string) (*ActionTask, error)
	// UpdateActionTask replaces the mutable fields of the task (Status,
	// Attempts, SealedOutput, SealedError, ErrorStatus, LogID, UpdatedAt,
	// FinishedAt) when its stored Version equals t.Version, then sets
	// t.Version to the next one; a stale version is ErrConflict.
	UpdateActionTask(ctx context.Context, t *ActionTask) error
	// StaleActionTasks returns up to limit tasks that are RUNNING with an
	// UpdatedAt before before: tasks whose instance died (a running task's
	// UpdatedAt is its heartbeat).
	StaleActionTasks(ctx context.Context, before time.Time, limit int) ([]*ActionTask, error)
	// DeleteActionTasksBefore deletes up to limit finished tasks that
	// finished before before, and returns how many (retention).
	DeleteActionTasksBefore(ctx context.Context, before time.Time, limit int) (int, error)
}
