package store

import "context"

// CommitHooker is implemented by Stores that can run a function after the
// transaction of a context commits. In-process schedulers use it so that a
// job enqueued inside WithTx exists only if the transaction commits.
type CommitHooker interface {
	// AfterCommit runs fn once the outermost transaction of ctx commits,
	// and never if it rolls back. Outside a transaction it runs fn at once.
	AfterCommit(ctx context.Context, fn func())
}

// Durable is implemented by Stores whose data outlives the process, such as
// store/postgres. connect.New requires an explicit Scheduler with such a
// Store: the default in-process scheduler would lose queued jobs (webhook
// deliveries) on a restart while their records stay pending in the Store.
type Durable interface {
	Durable() bool
}
