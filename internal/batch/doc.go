// Package batch coalesces concurrent calls of one operation into one call
// with many inputs, the way a database's group commit does: the first caller
// runs the operation at once with its input alone; callers that arrive while
// it runs wait, and the next of them runs it once for all of them. A batch
// therefore adds no delay when there is no concurrency, and under load the
// number of operations grows with the number of round trips rather than the
// number of callers.
//
// The webhook Deliverer uses it to read deliveries and record the outcomes of
// attempts: fifty workers that each did two statements per webhook now share
// a few statements.
package batch
