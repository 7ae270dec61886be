// Package recordcheck holds the checks that both shipped stores make on the
// arguments of functions.RecordStore, so that the SQLite store and the
// Postgres store refuse the same calls, with store.ErrInvalid, before
// anything is written (a refusal does not abort an enclosing transaction).
package recordcheck
