// Package batch coalesces concurrent reads of single values into batched
// reads: the Store reads the connections that concurrent requests need
// with one query instead of one each (package store/postgres).
//
// A [Batcher] needs no timer and adds no wait to a quiet system: a call
// that finds fewer than MaxInFlight batches running starts one at once,
// alone if it is alone. Under load, the calls that come while MaxInFlight
// batches run queue, and the first batch to finish takes up to MaxBatch of
// them as the next one. A database that answers one query of 32 rows in
// about the time of a few single-row queries then spends its time on rows
// instead of round trips.
package batch
