// Package oplog is the operations log: one entry for each mutating API
// operation, auth event and webhook delivery attempt. Entries have random ids
// (the log_id that connection errors point at), are listed newest first with
// filters, and never hold secrets: callers put only identifiers, statuses and
// short messages in them. Entries are deleted by age ([Pruner]; 15 days by
// default, see connect.RetentionConfig). Entries that requests nobody
// authenticated can cause go through a [Sampler], which writes at most one
// per key and interval, counting those it leaves out.
//
// [Writer.Routes] serves the log of an API key's environment over HTTP
// (GET /logs/operations, filtered and paged with an opaque cursor, GET
// /logs/operations/{id}, and GET /logs/stats, the counts by hour or day),
// with the scope environment:logs:read; [Writer.ListPage], [Writer.Get]
// and [Writer.Stats] do the same from Go. Stats needs a Store that is a
// [Counter].
package oplog
