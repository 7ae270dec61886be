// Package jobs defines the Scheduler: the part of connect that runs
// background jobs (webhook deliveries now; sync runs, async actions and
// sweeps later) and decides when and where.
//
// A feature package registers a [Handler] per job kind before Start, and
// enqueues [Job]s, usually in the same transaction as the change that causes
// them. A handler returns nil to complete the job, an error to have it run
// again later with backoff (until MaxAttempts), [Snooze] to have it run
// again after a delay without counting an attempt, or [Cancel] to end it at
// once.
//
// # Implementations
//
// Two implementations exist, one for each SQL Store, both built on River
// (github.com/riverqueue/river), and both pass the conformance suite in
// [github.com/embedauth/connect/jobs/jobstest]:
//
//   - sqlite.NewScheduler (or the Backend of sqlite.Connect) in
//     [github.com/embedauth/connect/store/sqlite], whose jobs are rows of
//     River's tables in the Store's file (or its private in-memory
//     database, for tests), worked by the process that has it open.
//   - postgres.NewScheduler (or the Backend of postgres.Connect) in
//     [github.com/embedauth/connect/store/postgres], whose jobs are rows of
//     River's tables in the Store's schema. A fleet of processes on one
//     database shares the queue.
//
// In both, a job inserted with a context from Store.WithTx is part of that
// transaction: it exists if and only if the transaction commits. Each job
// runs once, unless a process dies while running it: then River runs it
// again after RescueStuckJobsAfter.
//
// # Stopping
//
// Stop stops taking jobs and waits for the running ones within its
// context. When the context ends first, the running jobs' contexts are
// cancelled; those jobs are not failed but queued again, without counting
// the interrupted attempt, and run after the next Start (or, on Postgres,
// in another process). Handlers should therefore return promptly when their
// context is cancelled, and be safe to run again: every scheduler runs a
// job at least once, not exactly once, when processes stop or die.
package jobs
