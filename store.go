package connect

import (
	"github.com/embedauth/connect/connections"
	"github.com/embedauth/connect/environments"
	"github.com/embedauth/connect/functions"
	"github.com/embedauth/connect/integrations"
	"github.com/embedauth/connect/oplog"
	"github.com/embedauth/connect/store"
	"github.com/embedauth/connect/webhooks"
)

// Store holds all persistent state of a Service. It is composed of the small
// interfaces each feature package declares. store/sqlite and store/postgres
// implement it, and store/storetest checks any implementation.
//
// A Store never receives a plaintext secret: the Service seals credentials,
// client secrets, signing keys and variable values before they reach it.
type Store interface {
	environments.Store
	integrations.Store
	connections.Store
	connections.SessionStore
	oplog.Store
	// Counter counts the operations log over time (GET /logs/stats).
	oplog.Counter
	webhooks.Store
	webhooks.Requeuer
	// The Pruners delete what retention and the storage quota of
	// forwarded webhooks no longer keep (Service.Retain,
	// Config.IncomingWebhooks).
	oplog.Pruner
	webhooks.Pruner
	// SealedValues tells which encryption keys the sealed values need
	// (Service.CheckEncryptionKeys) and re-seals them
	// (Service.ReencryptSecrets).
	store.SealedValues
	// RecordStore holds the records that syncs save (GET /records).
	functions.RecordStore
	// FunctionStore, SyncStore, CheckpointStore and ActionStore hold the
	// deployed functions, the syncs and their runs, checkpoints and async
	// action tasks.
	functions.FunctionStore
	functions.SyncStore
	functions.CheckpointStore
	functions.ActionStore
}
