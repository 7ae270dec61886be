// Command schedules measures the scheduler of syncs at scale: many
// schedules of a no-op sync on Postgres, run by one or more instances (each
// a connect.Service with its own pool and its own River client) on one
// database.
//
//	go run ./bench/schedules -db 'postgres://postgres@127.0.0.1:5432/test?sslmode=disable'
//
// It migrates a schema of its own in the database of -db (default
// TEST_DATABASE_URL; the schema is dropped at the end, also on Ctrl-C),
// starts -instances Services (default 2) on it, registers on each a sync
// of integration "gh" with -frequency (default "1m") that auto-starts and
// does nothing but note when its Run starts, and imports -n connections
// (default 10,000) with connections.Service.ImportBatch in batches of
// 1,000: each import creates the connection's schedule. It then spreads
// the schedules' next due times evenly over -spread (default: the
// frequency's interval) from a start a few seconds ahead, so that schedule
// i is due at start + i*spread/n and then every interval (with 10,000
// schedules every minute, one is due every 6 ms, about 167 a second), and
// starts the instances, which tick every second (Config.Functions'
// default), claim the due schedules (FOR UPDATE SKIP LOCKED) and queue a
// River job per run, which any instance may work.
//
// For -duration (default 2 minutes) of due times it notes, for every run,
// the lag between its due time and the start of its Run, and reports the
// runs expected in that window, those that ran (by instance), the lag's
// p50, p99 and maximum (goal: every run within 5 s), and the CPU of the
// Go process (every instance; getrusage) and of the Postgres sessions of
// the instances' pools (from /proc/<pid>/stat, when Postgres runs on the
// same host), per second and per run. Then it measures the idle cost: it
// moves every schedule's next due time a day ahead, waits for the runs in
// flight, and reports the CPU per second of the Go process and of the
// Postgres sessions over -idle (default 30 s) while the instances keep
// ticking over the schedules, none of them due; then the same again after
// a VACUUM ANALYZE of the tables the ticks read (the runs and the move
// leave dead row versions, which autovacuum clears in time). The idle cost
// is that of started Services (River polling for jobs every 100 ms, the
// ticks, the change feed): run it with -n 10 to compare.
//
// The whole bench takes -duration plus about a minute and a half. The machine's load
// moves the figures: the lag's goal is what to read, and the CPU of the
// idle instances.
package main
