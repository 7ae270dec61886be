// Package webhooks tells the host's application what happened, with signed
// HTTP POSTs that receivers written for Nango accept unchanged.
//
// # Events and payloads
//
// Code that changes something (a connection created, a token refresh that
// failed, a sync run that finished) calls a [Notifier] with an [Event]
// whose Payload is an [AuthPayload], [SyncPayload], [AsyncActionPayload]
// or [ForwardPayload]. Their JSON is that of Nango's webhook bodies,
// including "from" (default "nango").
//
// # The outbox
//
// The default Notifier, [WebhookNotifier], checks the environment's
// WebhookSettings, picks the destinations (a connection's
// webhook_url_override alone when set, else the environment's one or two
// URLs), serialises the body once in canonical form ([Canonical]) and stores
// one [Delivery] per destination with a delivery job (kind [JobKind]), in
// the caller's transaction: a webhook exists if and only if the change that
// caused it committed, and it survives a restart.
//
// # Delivery
//
// The Store is the outbox. A started [Deliverer] claims due deliveries from
// it in batches (Store.ClaimDeliveries: each goes to one process for a
// lease) and POSTs up to DeliveryConfig.Concurrency at once, with the
// headers of [Sign]. The job only wakes it ([Deliverer.Handle]); it also
// looks every PollInterval and when a retry falls due. A non-2xx answer is
// retried: first as the spec says (2 retries, 100 ms backoff doubling),
// then on the slow [DefaultSchedule] (1 s to 10 h apart, about 26 hours in
// all), 20 s per attempt, redirects not followed; a 429's or 503's
// Retry-After postpones the next attempt when it asks for longer. Between
// attempts the delivery waits in the outbox, pending and due at the time of
// its next attempt: it holds no worker and survives restarts. The claim
// that starts an attempt counts it in the Store (Delivery.Attempts), so an
// attempt whose process died before recording its answer is counted too;
// each recorded attempt is an entry of the operations log (sampled for the
// forwards of unverified provider webhooks: see below). With a Store
// that is an [AttemptRecorder] (store/postgres), outcomes are stored in the
// background, many per statement, while the next POSTs go out. A delivery
// whose attempts are used up is failed; the host lists and resends those
// ([Outbox], its HTTP routes, or connect.Service.ListWebhookDeliveries and
// ResendWebhook).
//
// # Incoming provider webhooks
//
// [IncomingHandler] serves POST /webhook/{environment}/{integration}, where
// providers send their webhooks: it verifies the provider's signature when
// the catalogue describes one, routes the body to connections and hands the
// Notifier forward events. Bodies over [IncomingConfig].MaxBody (1 MiB by
// default) are refused with 413. A verified delivery routed to connections
// is also handed to the [SyncRunner] ([IncomingConfig].Syncs), which
// queues the webhook runs of the syncs that subscribe to its type.
//
// # Bounded storage under anonymous floods
//
// An integration whose provider does not sign accepts deliveries from
// anyone who knows its URL. What such deliveries can make the Service
// store is bounded:
//
//   - Forwards. [IncomingConfig].Forwards bounds the forward deliveries of
//     each integration: each is charged [ForwardCharge] of its body (the
//     body, a sixteenth more and [ForwardRowOverhead], 4 KiB, for its row
//     and index entries, measured on Postgres), and in the transaction of
//     each delivery's forwards the integration's oldest delivered or
//     failed forwards are deleted while its charges exceed MaxForward
//     (256 MiB by default); a delivery no signature verified is refused
//     with 429 webhook_storage_full when the pending ones alone exceed it.
//     So, once each delivery's transaction has committed, the forwards of
//     one integration are charged at most MaxForward bytes in all (only a
//     verified delivery, which a provider alone can send, is stored past
//     it).
//   - Log entries. Their forwards are marked ([Event].Unverified,
//     [Delivery].Unverified), and every operations log entry that such a
//     delivery causes goes through an [oplog.Sampler]
//     ([IncomingConfig].Sampler, [DelivererConfig].Sampler; one shared
//     Sampler per connect.Service): the handler's entry (accepted,
//     challenge answered, or refused, the reason as outcome), the
//     Notifier's (none: the handler's says what it queued) and those of
//     the delivery attempts of the forwards (delivered, retrying,
//     given_up). At most one entry is written per environment,
//     integration and outcome in each interval (one minute by default),
//     its meta "suppressed" counting those left out. An integration has at
//     most 10 such outcomes (the 10 signature refusal reasons when its
//     provider signs; otherwise accepted, challenge, invalid_body,
//     invalid_challenge, storage_full, enqueue_failed, delivered,
//     retrying and given_up), and an entry takes at most 5 KiB on disk
//     (typically under 1 KiB). Over a log retention R and a sampling
//     interval I, the entries of one integration's unverified deliveries
//     are at most 10 × (R/I + 1) × 5 KiB per process (the Sampler counts
//     in memory, per process: N instances write up to N times as much):
//     216,010 entries and 1.03 GiB at the defaults (15 days, one
//     minute), typically about 150 MB. A Sampler tracks at most
//     oplog.MaxSampleKeys keys, so one process writes at most that many
//     such entries per interval, however many integrations there are.
//
// Entries of verified deliveries and of every other webhook are all
// written: only a provider (or the host) can cause them. The deliveries API
// keeps each forward's own status, last error and attempt count whatever
// the log samples.
//
// # Retention
//
// The outbox keeps delivered and failed deliveries for the deliveries API
// and resends until [Pruner].DeleteDeliveriesBefore deletes them
// (connect.Service.Retain: 30 days after their final state by default).
// Pending deliveries are never deleted.
//
// # Verifying
//
// Every POST carries X-Svc-Hmac-Sha256 (hex HMAC-SHA256 of the body with the
// environment's signing key) and the same value as X-Nango-Hmac-Sha256,
// the header Nango's verifyIncomingWebhookRequest reads, so that receivers
// written for Nango verify unchanged; the legacy X-Svc-Signature and
// X-Nango-Signature (hex SHA-256 of key ‖ body, for Nango's deprecated
// verifyWebhookSignature); X-Svc-Delivery-Id (the same on every attempt),
// X-Svc-Timestamp and X-Svc-Webhook-Signature: "v1=" and the hex
// HMAC-SHA256 of "<delivery id>.<timestamp>.<body>", which lets a receiver
// refuse replays.
// A Go receiver calls [Verify] on the raw body:
//
//	body, _ := io.ReadAll(r.Body)
//	err := webhooks.Verify(r.Header, body, signingKey, &webhooks.VerifyOptions{Tolerance: 5 * time.Minute})
//	if err != nil { http.Error(w, "bad signature", http.StatusUnauthorized); return }
//
// # Address policy
//
// Webhook URLs are set by an environment's API-key holders, so the
// default client follows DeliveryConfig.Policy (package egress), checked
// at dial time: the zero Policy reaches only public addresses. An attempt
// that cannot be sent is recorded as "address not allowed", "could not
// reach the receiver" or a timeout, never with the dial error. The policy
// is applied when a URL is set too ([DeliveryConfig.CheckURL]): an IP
// address or localhost it refuses, a host name that resolves only to
// refused addresses, a user name or password in the URL, are refused at
// once rather than failing every delivery for a day.
package webhooks
