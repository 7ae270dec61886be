package functions

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"iter"
	"reflect"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/embedauth/connect/store"
)

// SyncContext is the run context of a sync run: a Context plus the
// records of the sync's models for this connection and variant.
type SyncContext struct {
	*Context
	// Variant is the sync variant the run is for (BaseVariant by
	// default).
	Variant string
	// LastSyncDate is the start of the last successful run; nil on the
	// first run and after a reset.
	LastSyncDate *time.Time

	run *runState
}

// runState is what a sync run accumulates.
type runState struct {
	models   map[string]bool
	prefix   string // the checkpoint key of the run ("sync:<name>:<variant>")
	touch    int64  // the run's touch generation
	trackAll bool   // the function's track_deletes
	webhook  bool   // a run of the sync's webhook handler

	mu      sync.Mutex
	results map[string]*ModelResult // guarded by mu
	// ends are the models whose TrackDeletesEnd was called, with the
	// generation their tracking started at; applied when the run
	// succeeds. Guarded by mu.
	ends map[string]int64
	// tracking caches the models with a tracking marker (their start
	// generation); guarded by mu.
	tracking map[string]int64
	// fresh are the models whose last batch was mostly new or changed
	// records: their next one is sealed and saved without asking the
	// store first which of its records are unchanged. Guarded by mu.
	fresh map[string]bool
}

// checkUnchanged tells whether the next batch of model should be checked
// for unchanged records before it is sealed: the first batch of a model
// in a run is, and the next ones while at least a quarter of a batch is
// unchanged (a sync run again over the same data), which saves sealing
// and sending records the store would not write. A run that saves new
// data pays one check.
func (r *runState) checkUnchanged(model string) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return !r.fresh[model]
}

// saved notes how many of a batch of n records of model were unchanged.
func (r *runState) saved(model string, n, unchanged int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.fresh == nil {
		r.fresh = map[string]bool{}
	}
	r.fresh[model] = unchanged*4 < n
}

func (r *runState) count(model string, res SaveResult) {
	r.mu.Lock()
	defer r.mu.Unlock()
	m := r.results[model]
	if m == nil {
		m = &ModelResult{}
		r.results[model] = m
	}
	m.Added += res.Added
	m.Updated += res.Updated
	m.Deleted += res.Deleted
}

// scope returns the record scope of a model, refusing a model the sync
// does not declare.
func (c *SyncContext) scope(model string) (RecordScope, error) {
	if !c.run.models[model] {
		return RecordScope{}, store.Invalid("invalid_sync_record", fmt.Sprintf("The model %q is not one of the sync's models.", model))
	}
	return RecordScope{EnvironmentID: c.EnvironmentID, ConnectionID: c.connRow, Model: model, Variant: c.Variant}, nil
}

// encodedRecord is a record encoded for the store.
type encodedRecord struct {
	id      string
	payload []byte
}

// encodeRecords encodes the elements of records (a slice of structs, maps
// or json.RawMessage values) as JSON objects with their ids, refusing more
// than MaxRecordsPerBatch, records that are not objects, and ids that are
// missing, empty, not a string or number, or longer than MaxRecordIDLen.
// Of two records with the same id the first is kept. A large batch is
// encoded on several goroutines (inParallel); the error is that of the
// first record refused.
func encodeRecords(records any) ([]encodedRecord, int, error) {
	v := reflect.ValueOf(records)
	if v.Kind() != reflect.Slice && v.Kind() != reflect.Array {
		return nil, 0, store.Invalid("invalid_sync_record", fmt.Sprintf("records must be a slice, not %T.", records))
	}
	n := v.Len()
	if n > MaxRecordsPerBatch {
		return nil, 0, store.Invalid("invalid_sync_record",
			fmt.Sprintf("%d records in one call: at most %d per batch; split the batch.", n, MaxRecordsPerBatch))
	}
	all := make([]encodedRecord, n)
	errs := make([]error, n)
	inParallel(n, func(lo, hi int) {
		for i := lo; i < hi; i++ {
			b, err := encodeRecord(v.Index(i).Interface())
			var id string
			if err == nil {
				id, err = recordID(b)
			}
			if err != nil {
				errs[i] = err
				return // the rest of the chunk is not needed
			}
			all[i] = encodedRecord{id: id, payload: b}
		}
	})
	out := all[:0]
	seen := make(map[string]bool, n)
	dropped := 0
	for i := range all {
		if errs[i] != nil {
			return nil, 0, store.Invalid("invalid_sync_record", fmt.Sprintf("record %d: %v", i, errs[i]))
		}
		id := all[i].id
		if seen[id] {
			dropped++
			continue
		}
		seen[id] = true
		out = append(out, all[i])
	}
	return out, dropped, nil
}

// parallelChunk is the fewest records inParallel gives a goroutine: below
// it, starting one costs more than it saves.
const parallelChunk = 64

// inParallel calls fn on the chunks [lo, hi) of [0, n), on up to
// GOMAXPROCS goroutines: encoding, hashing and sealing a batch of 1,000
// records takes milliseconds of CPU, which the database waits for. A
// panic in fn is raised again in the caller once every chunk is done,
// with the stack of the goroutine that panicked (see protect).
func inParallel(n int, fn func(lo, hi int)) {
	w := min(runtime.GOMAXPROCS(0), n/parallelChunk)
	if w <= 1 {
		fn(0, n)
		return
	}
	var (
		wg    sync.WaitGroup
		mu    sync.Mutex
		first *chunkPanic
	)
	size := (n + w - 1) / w
	for lo := 0; lo < n; lo += size {
		wg.Go(func() {
			defer func() {
				if v := recover(); v != nil {
					mu.Lock()
					if first == nil {
						first = &chunkPanic{value: v, stack: stack(3)}
					}
					mu.Unlock()
				}
			}()
			fn(lo, min(lo+size, n))
		})
	}
	wg.Wait()
	if first != nil {
		panic(first)
	}
}

// chunkPanic is a panic of a goroutine of inParallel, raised again in its
// caller.
type chunkPanic struct {
	value any
	stack []string
}

// encodeRecord encodes one record as a JSON object, without the
// _nango_metadata of a record read back.
func encodeRecord(r any) ([]byte, error) {
	var b []byte
	switch x := r.(type) {
	case json.RawMessage:
		if !json.Valid(x) {
			return nil, errors.New("not JSON")
		}
		b = x
	case []byte:
		if !json.Valid(x) {
			return nil, errors.New("not JSON")
		}
		b = x
	case map[string]any:
		if _, ok := x["_nango_metadata"]; ok {
			y := make(map[string]any, len(x))
			for k, v := range x {
				if k != "_nango_metadata" {
					y[k] = v
				}
			}
			x = y
		}
		var err error
		if b, err = json.Marshal(x); err != nil {
			return nil, err
		}
	default:
		var err error
		if b, err = json.Marshal(r); err != nil {
			return nil, err
		}
	}
	b = bytes.TrimSpace(b)
	if len(b) == 0 || b[0] != '{' {
		return nil, errors.New("a record must be a JSON object")
	}
	if bytes.Contains(b, []byte(`"_nango_metadata"`)) {
		var m map[string]any
		if err := json.Unmarshal(b, &m); err != nil {
			return nil, err
		}
		return encodeRecord(m)
	}
	return b, nil
}

// recordID reads the id of an encoded record (a JSON object, as
// encodeRecord returns): a non-empty string or a number, at most
// MaxRecordIDLen characters once NUL bytes are dropped. It finds the id
// without decoding the record (topLevelID), which a batch of large records
// would spend most of its encoding time on.
func recordID(b []byte) (string, error) {
	raw, ok := topLevelID(b)
	if !ok {
		var probe struct {
			ID json.RawMessage `json:"id"`
		}
		if err := json.Unmarshal(b, &probe); err != nil {
			return "", err
		}
		raw = bytes.TrimSpace(probe.ID)
	}
	if len(raw) == 0 || string(raw) == "null" {
		return "", errors.New("the record has no id")
	}
	var id string
	switch raw[0] {
	case '"':
		if s, ok := plainString(raw); ok {
			id = s
		} else if err := json.Unmarshal(raw, &id); err != nil {
			return "", err
		}
		id = strings.ReplaceAll(id, "\x00", "")
	case '-', '0', '1', '2', '3', '4', '5', '6', '7', '8', '9':
		if _, err := strconv.ParseFloat(string(raw), 64); err != nil {
			return "", fmt.Errorf("the id %s is not a number", raw)
		}
		id = string(raw)
	default:
		return "", errors.New("the id must be a string or a number")
	}
	if id == "" {
		return "", errors.New("the id is empty")
	}
	if utf8.RuneCountInString(id) > MaxRecordIDLen {
		return "", fmt.Errorf("the id is longer than %d characters", MaxRecordIDLen)
	}
	return id, nil
}

// topLevelID returns the value of the member "id" of the JSON object b
// (matched as encoding/json matches the tag `json:"id"`: without regard to
// case, the last one winning), nil when it has none, reading b once
// without decoding it. ok is false when b holds what it does not handle
// (a key with an escape or a non-ASCII byte, or b not a well-formed
// object): the caller then decodes b with encoding/json.
func topLevelID(b []byte) (id []byte, ok bool) {
	i := skipSpace(b, 0)
	if i >= len(b) || b[i] != '{' {
		return nil, false
	}
	i = skipSpace(b, i+1)
	if i < len(b) && b[i] == '}' {
		return nil, true
	}
	for {
		if i >= len(b) || b[i] != '"' {
			return nil, false
		}
		k := i + 1
		for ; k < len(b) && b[k] != '"'; k++ {
			if b[k] == '\\' || b[k] >= utf8.RuneSelf {
				return nil, false
			}
		}
		if k >= len(b) {
			return nil, false
		}
		key := b[i+1 : k]
		i = skipSpace(b, k+1)
		if i >= len(b) || b[i] != ':' {
			return nil, false
		}
		i = skipSpace(b, i+1)
		end, ok := skipValue(b, i)
		if !ok {
			return nil, false
		}
		if len(key) == 2 && key[0]|0x20 == 'i' && key[1]|0x20 == 'd' {
			id = b[i:end]
		}
		i = skipSpace(b, end)
		if i >= len(b) {
			return nil, false
		}
		switch b[i] {
		case ',':
			i = skipSpace(b, i+1)
		case '}':
			return id, true
		default:
			return nil, false
		}
	}
}

// plainString returns the JSON string raw (quotes included) when it has
// no escape, no control character and no invalid UTF-8: its bytes are then
// what json.Unmarshal would decode.
func plainString(raw []byte) (string, bool) {
	if len(raw) < 2 || raw[0] != '"' || raw[len(raw)-1] != '"' {
		return "", false
	}
	s := raw[1 : len(raw)-1]
	for _, c := range s {
		if c == '\\' || c == '"' || c < 0x20 {
			return "", false
		}
	}
	if !utf8.Valid(s) {
		return "", false
	}
	return string(s), true
}

// skipSpace returns the index of the first byte of b from i that is not
// JSON whitespace.
func skipSpace(b []byte, i int) int {
	for i < len(b) && (b[i] == ' ' || b[i] == '\n' || b[i] == '\t' || b[i] == '\r') {
		i++
	}
	return i
}

// skipValue returns the index just after the JSON value that starts at
// b[i]; ok is false when it does not end.
func skipValue(b []byte, i int) (int, bool) {
	if i >= len(b) {
		return 0, false
	}
	switch b[i] {
	case '"':
		return skipString(b, i)
	case '{', '[':
		depth := 0
		for i < len(b) {
			switch b[i] {
			case '"':
				end, ok := skipString(b, i)
				if !ok {
					return 0, false
				}
				i = end
				continue
			case '{', '[':
				depth++
			case '}', ']':
				depth--
				if depth == 0 {
					return i + 1, true
				}
			}
			i++
		}
		return 0, false
	default: // a number, true, false or null
		start := i
		for i < len(b) && b[i] != ',' && b[i] != '}' && b[i] != ']' && b[i] != ' ' &&
			b[i] != '\n' && b[i] != '\t' && b[i] != '\r' {
			i++
		}
		return i, i > start
	}
}

// skipString returns the index just after the JSON string that starts at
// b[i] (a quote).
func skipString(b []byte, i int) (int, bool) {
	for i++; i < len(b); i++ {
		switch b[i] {
		case '\\':
			i++
		case '"':
			return i + 1, true
		}
	}
	return 0, false
}

// Save saves records of a model: a slice (at most MaxRecordsPerBatch) of
// structs, maps or json.RawMessage values, each a JSON object with an id
// (a string or a number). A record not stored is added; a stored one
// whose content changed is updated; an unchanged one is left as it is and
// not counted. Of two records with the same id, the first is kept. The
// records of a large batch are encoded on several goroutines at once, so
// a MarshalJSON method of theirs must not change shared state without a
// lock (json.Marshal's own methods never do).
func (c *SyncContext) Save(ctx context.Context, model string, records any) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	scope, err := c.scope(model)
	if err != nil {
		return err
	}
	recs, dropped, err := encodeRecords(records)
	if err != nil {
		return err
	}
	if dropped > 0 {
		_ = c.Log(ctx, slogWarn, fmt.Sprintf("%d records of %s had the id of an earlier record of the same batch and were not saved", dropped, model))
	}
	if len(recs) == 0 {
		return nil
	}
	return c.saveEncoded(ctx, scope, recs)
}

func (c *SyncContext) saveEncoded(ctx context.Context, scope RecordScope, recs []encodedRecord) error {
	touch, err := c.touchFor(ctx, scope.Model)
	if err != nil {
		return err
	}
	n := len(recs)
	writes := make([]RecordWrite, n)
	if c.run.checkUnchanged(scope.Model) {
		inParallel(n, func(lo, hi int) {
			for i := lo; i < hi; i++ {
				writes[i] = RecordWrite{ID: recs[i].id, Hash: HashPayload(recs[i].payload)}
			}
		})
		same, err := c.svc.st.UnchangedRecords(ctx, scope, writes, touch)
		if err != nil {
			return err
		}
		if len(same) > 0 {
			writes, recs = dropUnchanged(writes, recs, same)
		}
	}
	var (
		mu      sync.Mutex
		sealErr error
	)
	inParallel(len(recs), func(lo, hi int) {
		for i := lo; i < hi; i++ {
			r, w := &recs[i], &writes[i]
			sealed, err := c.svc.cfg.Keyring.Seal(ctx, PurposeRecordPayload, r.payload)
			if err != nil {
				mu.Lock()
				sealErr = err
				mu.Unlock()
				return
			}
			if w.ID == "" { // not hashed by the check
				w.ID, w.Hash = r.id, HashPayload(r.payload)
			}
			w.SealedPayload = sealed
		}
	})
	if sealErr != nil {
		return sealErr
	}
	var res SaveResult
	if len(writes) > 0 {
		if res, err = c.svc.st.SaveRecords(ctx, scope, writes, c.svc.nowUTC(), touch); err != nil {
			return err
		}
	}
	c.run.count(scope.Model, res)
	c.run.saved(scope.Model, n, n-res.Added-res.Updated)
	return nil
}

// dropUnchanged removes from writes and recs (parallel slices) the
// records whose ids are in same, in place.
func dropUnchanged(writes []RecordWrite, recs []encodedRecord, same []string) ([]RecordWrite, []encodedRecord) {
	skip := make(map[string]struct{}, len(same))
	for _, id := range same {
		skip[id] = struct{}{}
	}
	k := 0
	for i := range writes {
		if _, ok := skip[writes[i].ID]; ok {
			continue
		}
		writes[k], recs[k] = writes[i], recs[i]
		k++
	}
	return writes[:k], recs[:k]
}

// PurposeRecordPayload is the purpose (associated data) records' payloads
// are sealed for.
const PurposeRecordPayload = "record_payload"

// touchFor is the touch generation of a save of model: the run's when
// deletes of the model are tracked, else 0.
func (c *SyncContext) touchFor(ctx context.Context, model string) (int64, error) {
	if c.run.trackAll {
		return c.run.touch, nil
	}
	since, err := c.trackingSince(ctx, model)
	if err != nil || since == 0 {
		return 0, err
	}
	return c.run.touch, nil
}

// trackingKey is the checkpoint key of the delete tracking of a model.
func (c *SyncContext) trackingKey(model string) string {
	return c.run.prefix + ":trackDeletes:" + model
}

// trackingSince returns the generation at which the delete tracking of a
// model started, 0 when it is not tracked.
func (c *SyncContext) trackingSince(ctx context.Context, model string) (int64, error) {
	c.run.mu.Lock()
	since, ok := c.run.tracking[model]
	c.run.mu.Unlock()
	if ok {
		return since, nil
	}
	sc, err := c.svc.st.GetCheckpoint(ctx, c.connRow, c.trackingKey(model))
	switch {
	case errors.Is(err, store.ErrNotFound):
		since = 0
	case err != nil:
		return 0, err
	default:
		var v struct {
			Since int64 `json:"since"`
		}
		if err := json.Unmarshal(sc.Value, &v); err != nil {
			return 0, fmt.Errorf("functions: the delete tracking of %s: %w", model, err)
		}
		since = v.Since
	}
	c.run.mu.Lock()
	c.run.tracking[model] = since
	c.run.mu.Unlock()
	return since, nil
}

// noTrackingInWebhook refuses delete tracking in a webhook run: it
// handles one provider event, not a full refresh, and may run while the
// sync's scheduled run tracks deletes.
func (c *SyncContext) noTrackingInWebhook(call string) error {
	if !c.run.webhook {
		return nil
	}
	return store.Invalid("invalid_sync_record", call+" is not available in a webhook run: delete tracking belongs to the sync's scheduled runs.")
}

// Webhook reports whether the run is a run of the sync's webhook handler
// for a provider webhook (its scheduled runs, and the runs triggered by
// the API, are not).
func (c *SyncContext) Webhook() bool { return c.run.webhook }

// TrackDeletesStart starts tracking which records of a model the sync
// saves, for a full refresh: TrackDeletesEnd then deletes those not saved
// since. When tracking started in an earlier run that did not complete
// (the sync resumes from a checkpoint), it keeps that start, so records
// saved by the interrupted run count as saved.
func (c *SyncContext) TrackDeletesStart(ctx context.Context, model string) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if _, err := c.scope(model); err != nil {
		return err
	}
	if err := c.noTrackingInWebhook("TrackDeletesStart"); err != nil {
		return err
	}
	since, err := c.trackingSince(ctx, model)
	if err != nil || since != 0 {
		return err
	}
	v := json.RawMessage(fmt.Sprintf(`{"since":%d}`, c.run.touch))
	if _, err := c.svc.st.PutCheckpoint(ctx, c.connRow, c.trackingKey(model), v, 0, c.svc.nowUTC()); err != nil &&
		!errors.Is(err, store.ErrConflict) {
		return err
	}
	c.run.mu.Lock()
	delete(c.run.tracking, model) // read back: another run may have won
	c.run.mu.Unlock()
	_, err = c.trackingSince(ctx, model)
	return err
}

// TrackDeletesEnd ends the tracking TrackDeletesStart started: when the
// run succeeds, the records of the model not saved since the start are
// deleted (counted as deleted in the run's result and webhook) and the
// tracking ends. A run that fails deletes nothing and keeps the tracking
// for the next run. Without a start it is an error.
func (c *SyncContext) TrackDeletesEnd(ctx context.Context, model string) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if _, err := c.scope(model); err != nil {
		return err
	}
	if err := c.noTrackingInWebhook("TrackDeletesEnd"); err != nil {
		return err
	}
	since, err := c.trackingSince(ctx, model)
	if err != nil {
		return err
	}
	if since == 0 {
		return store.Invalid("invalid_sync_record", fmt.Sprintf("TrackDeletesEnd(%q) without TrackDeletesStart.", model))
	}
	c.run.mu.Lock()
	c.run.ends[model] = since
	c.run.mu.Unlock()
	return nil
}

// Update merges partial records into the stored ones of a model: each a
// JSON object with the id of a stored record; objects are merged
// recursively, arrays and other values replaced. Ids not stored are
// skipped. A record whose content changes counts as updated.
func (c *SyncContext) Update(ctx context.Context, model string, partials any) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	scope, err := c.scope(model)
	if err != nil {
		return err
	}
	recs, _, err := encodeRecords(partials)
	if err != nil {
		return err
	}
	if len(recs) == 0 {
		return nil
	}
	ids := make([]string, len(recs))
	for i, r := range recs {
		ids[i] = r.id
	}
	return c.svc.st.WithTx(ctx, func(ctx context.Context) error {
		stored, err := c.svc.st.GetRecords(ctx, scope, ids)
		if err != nil {
			return err
		}
		byID := make(map[string]*Record, len(stored))
		for _, r := range stored {
			byID[r.ID] = r
		}
		var merged []encodedRecord
		for _, r := range recs {
			old := byID[r.id]
			if old == nil || old.SealedPayload == "" {
				continue
			}
			plain, err := c.svc.cfg.Keyring.Open(PurposeRecordPayload, old.SealedPayload)
			if err != nil {
				return err
			}
			var dst, patch map[string]any
			if err := json.Unmarshal(plain, &dst); err != nil {
				return fmt.Errorf("functions: the stored record %q of %s: %w", r.id, model, err)
			}
			if err := json.Unmarshal(r.payload, &patch); err != nil {
				return err
			}
			b, err := json.Marshal(DeepMerge(dst, patch))
			if err != nil {
				return err
			}
			merged = append(merged, encodedRecord{id: r.id, payload: b})
		}
		if len(merged) == 0 {
			return nil
		}
		return c.saveEncoded(ctx, scope, merged)
	})
}

// Delete deletes records of a model by id: they are kept as deleted
// (GET /records lists them with last_action DELETED). Ids not stored, or
// deleted already, are ignored.
func (c *SyncContext) Delete(ctx context.Context, model string, ids ...string) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	scope, err := c.scope(model)
	if err != nil {
		return err
	}
	if len(ids) > MaxRecordsPerBatch {
		return store.Invalid("invalid_sync_record",
			fmt.Sprintf("%d ids in one call: at most %d per batch; split the batch.", len(ids), MaxRecordsPerBatch))
	}
	if len(ids) == 0 {
		return nil
	}
	res, err := c.svc.st.DeleteRecords(ctx, scope, ids, c.svc.nowUTC())
	if err != nil {
		return err
	}
	c.run.count(model, res)
	return nil
}

// Get returns the stored records of a model with these ids (deleted ones
// are absent), by id.
func (c *SyncContext) Get(ctx context.Context, model string, ids []string) (map[string]json.RawMessage, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	scope, err := c.scope(model)
	if err != nil {
		return nil, err
	}
	out := make(map[string]json.RawMessage, len(ids))
	for start := 0; start < len(ids); start += MaxRecordsPerBatch {
		recs, err := c.svc.st.GetRecords(ctx, scope, ids[start:min(start+MaxRecordsPerBatch, len(ids))])
		if err != nil {
			return nil, err
		}
		for _, r := range recs {
			if r.SealedPayload == "" {
				continue
			}
			b, err := c.svc.cfg.Keyring.Open(PurposeRecordPayload, r.SealedPayload)
			if err != nil {
				return nil, err
			}
			out[r.ID] = b
		}
	}
	return out, nil
}

// List iterates over the stored records of a model that are not deleted,
// oldest change first.
func (c *SyncContext) List(ctx context.Context, model string) iter.Seq2[json.RawMessage, error] {
	return func(yield func(json.RawMessage, error) bool) {
		scope, err := c.scope(model)
		if err != nil {
			yield(nil, err)
			return
		}
		var after int64
		for {
			if err := ctx.Err(); err != nil {
				yield(nil, err)
				return
			}
			recs, err := c.svc.st.ListRecords(ctx, scope, RecordQuery{AfterSeq: after, Filter: FilterAdded | FilterUpdated, Limit: 100})
			if err != nil {
				yield(nil, err)
				return
			}
			for _, r := range recs {
				after = r.Seq
				if r.SealedPayload == "" {
					continue
				}
				b, err := c.svc.cfg.Keyring.Open(PurposeRecordPayload, r.SealedPayload)
				if !yield(b, err) || err != nil {
					return
				}
			}
			if len(recs) < 100 {
				return
			}
		}
	}
}
