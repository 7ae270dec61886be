// Package functions runs a host's code against connections: actions,
// syncs and on-event functions, written in Go and registered with
// [Service.Register] (connect's Service.Functions returns the Service).
//
//   - An [Action] is called with an input and answers an output: through
//     POST /action/trigger (synchronously, or with X-Async as a durable
//     task whose outcome GET /action/{id} serves) or from Go
//     ([Service.TriggerAction], [Service.TriggerActionAsync]).
//     [NewAction] builds a typed one, its JSON Schemas derived from the Go
//     types. An input is checked against the action's published input
//     schema before anything runs, is queued or is logged: one that does
//     not fit is answered 400 invalid_action_input, naming each problem's
//     path in JSON's terms ([InputProblem]).
//   - A [Sync] runs on a schedule for each connection (and variant) of its
//     integration and saves records of its models, which GET /records
//     lists. Schedules live in the Store; every started instance looks for
//     due ones each Config.TickInterval (one indexed query, FOR UPDATE SKIP
//     LOCKED on Postgres) and queues their runs as Scheduler jobs, so that
//     a fleet runs each scheduled run once and idle schedules cost
//     nothing. A running run writes a heartbeat; one whose instance died is
//     reported as interrupted, and the next run resumes from the last
//     checkpoint. A sync with WebhookSubscriptions also runs its
//     OnWebhook for each provider webhook of those types routed to a
//     connection ([Service.RunWebhookSyncs]): a durable run of its own,
//     beside the scheduled ones, whether the schedule is paused or not.
//     [Service.CancelSync] (POST /sync/cancel) stops the runs in progress;
//     a disabled sync ([Service.SetEnabled], PATCH
//     /integrations/{key}/functions/{name}) lets its scheduled slots pass
//     without a run.
//   - An [OnEvent] function runs after a connection is created (as a
//     durable job), before one is deleted, or to validate new credentials
//     (its error refuses them): see [Service.ConnectionsSaved],
//     [Service.BeforeDelete] and [Service.ValidateConnection], which
//     package connections calls through its Hooks.
//
// A run's only door to side effects is its run context, [Context] (and
// [SyncContext] for syncs): provider calls through the proxy with the
// connection's credentials, pagination driven by the provider catalogue,
// the connection and its metadata, environment variables, the operations
// log, checkpoints, and for syncs the records. The limits (1,000 records
// per call, record ids of at most 255 characters, declared models only,
// 10 MB of action output, the run deadline) live there too.
//
// A failed run is answered as Nango answers it ([Classify]): an
// [ActionError] (its Type first in the payload) is 500
// action_script_runtime_error, a provider's answer outside 2xx
// ([UpstreamError]) 424 script_http_error, a provider call that got no
// answer as the proxy answers it (403 upstream_address_refused when the
// address policy refused it, 504 upstream_timeout, 502 upstream_error),
// whether it went through [Context.Proxy] or a client of
// [Context.HTTPClient], a panic or any other error 500
// script_internal_error. No answer, webhook or stored result holds a
// stack, a dial error or the address of a provider that could not be
// reached: a panic's stack goes into the run's operations log entry
// (Meta "stacktrace"), and so does the network's own account of a failed
// call (Meta "error_detail").
//
// The code of a function runs on a [Runtime]: Go functions on the built-in
// one; a runtime for code deployed at run time is added with
// [Service.AddRuntime]. Scheduling, bookkeeping, webhooks and records never
// depend on which runtime ran a function. Functions written in TypeScript
// for Nango are deployed at run time with the nango CLI (POST /sync/deploy
// and its confirmation, [Service.DeployFunctions]) and run on the runtime
// named [JavaScriptRuntime]; a deployment cannot replace a function
// registered in Go, nor the reverse ([ClashError]).
//
// Deployed functions, schedules, runs, checkpoints, async action tasks and
// records are held by a [Store] (store/sqlite and store/postgres
// implement it; store/storetest checks it). Record payloads, action inputs,
// outputs and errors are sealed like every other secret.
package functions
