package jsruntime

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"iter"
	"log/slog"
	"maps"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/embedauth/connect/connections"
	"github.com/embedauth/connect/functions"
	"github.com/embedauth/connect/integrations"
)

// host answers the operations of one run's nango object. It lives on the
// run's goroutine: the engine calls it synchronously.
type host struct {
	ctx  context.Context
	rt   *Runtime
	c    *functions.Context
	sc   *functions.SyncContext
	prog *program

	refs   []error // errors handed to JavaScript, by ref-1
	pagers map[int]*pager
	nextID int
	logs   int
	locks  []lockKey
}

// pager is a paged iteration a run is reading (paginate, listRecords).
type pager struct {
	next func() (any, error, bool)
	stop func()
}

func newHost(ctx context.Context, rt *Runtime, c *functions.Context, sc *functions.SyncContext, p *program) *host {
	return &host{ctx: ctx, rt: rt, c: c, sc: sc, prog: p, pagers: map[int]*pager{}}
}

// close ends what the run left open: its iterations and its locks.
func (h *host) close() {
	for _, p := range h.pagers {
		p.stop()
	}
	for _, k := range h.locks {
		h.rt.locks.release(k, h)
	}
}

// keep stores err for the classifier and returns its ref.
func (h *host) keep(err error) int {
	h.refs = append(h.refs, err)
	return len(h.refs)
}

func (h *host) ref(n int) error {
	if n < 1 || n > len(h.refs) {
		return nil
	}
	return h.refs[n-1]
}

// errMaxRefs bounds the errors a run may keep (a loop catching failures).
const maxRefs = 10000

// call is __connect_host: the operation's name, a newline and its
// arguments as JSON in; {"v": value} or {"e": error} as JSON out.
func (h *host) call(arg string) string {
	op, raw, _ := strings.Cut(arg, "\n")
	v, err := h.do(op, []byte(raw))
	var b []byte
	if err != nil {
		b, err = json.Marshal(map[string]any{"e": h.errorValue(err)})
	} else {
		b, err = json.Marshal(map[string]any{"v": v})
	}
	if err != nil {
		b, _ = json.Marshal(map[string]any{"e": map[string]any{"kind": "error", "message": op + ": the answer cannot be encoded: " + err.Error()}})
	}
	return string(b)
}

// errorValue is how an operation's error reaches JavaScript.
func (h *host) errorValue(err error) map[string]any {
	ref := 0
	if len(h.refs) < maxRefs {
		ref = h.keep(err)
	}
	var up *functions.UpstreamError
	if errors.As(err, &up) {
		e := responseValue(up.Status, up.Header, up.Body, false)
		e["kind"], e["ref"] = "http", ref
		return e
	}
	var re *functions.RunError
	if errors.As(err, &re) && re.Failure != nil { // triggerAction: as the API answers it
		body, _ := json.Marshal(re.Failure.Body)
		e := responseValue(re.Failure.Status, http.Header{"Content-Type": {"application/json"}}, body, false)
		e["kind"], e["ref"] = "http", ref
		return e
	}
	e := map[string]any{"kind": "error", "message": errorText(err), "ref": ref}
	var se interface{ Code() string }
	if errors.As(err, &se) {
		e["code"] = se.Code()
	}
	return e
}

// errorText is an error's text as the function sees it.
func errorText(err error) string {
	f := functions.Classify(err)
	if f != nil && f.Body.Error.Code != "script_internal_error" {
		if f.Body.Error.Message != "" {
			return f.Body.Error.Message + " (" + f.Body.Error.Code + ")"
		}
		return f.Body.Error.Code
	}
	return err.Error()
}

// responseValue is a provider's answer as the nango object reads it.
func responseValue(status int, hdr http.Header, body []byte, binary bool) map[string]any {
	headers := make(map[string]any, len(hdr))
	for k, vs := range hdr {
		lk := strings.ToLower(k)
		if lk == "set-cookie" {
			headers[lk] = vs
			continue
		}
		headers[lk] = strings.Join(vs, ", ")
	}
	v := map[string]any{"status": status, "statusText": http.StatusText(status), "headers": headers}
	if binary || !utf8.Valid(body) {
		v["b64"] = base64.StdEncoding.EncodeToString(body)
	} else {
		v["body"] = string(body)
	}
	return v
}

func (h *host) do(op string, raw []byte) (any, error) {
	if err := h.ctx.Err(); err != nil {
		return nil, err
	}
	ctx := h.ctx
	switch op {
	case "proxy":
		var a proxyArgs
		if err := decode(raw, &a); err != nil {
			return nil, err
		}
		req, err := a.request()
		if err != nil {
			return nil, err
		}
		resp, err := h.c.ProxyFor(ctx, a.ProviderConfigKey, a.ConnectionID, req)
		if err != nil {
			return nil, err
		}
		v := responseValue(resp.Status, resp.Header, resp.Body, a.ResponseType == "arraybuffer" || a.ResponseType == "stream" || a.ResponseType == "blob")
		if resp.URL != nil {
			v["path"] = resp.URL.Path
		}
		return v, nil
	case "paginate.start":
		var a proxyArgs
		if err := decode(raw, &a); err != nil {
			return nil, err
		}
		req, err := a.request()
		if err != nil {
			return nil, err
		}
		var pg *integrations.Paginate
		if len(a.Paginate) > 0 && string(a.Paginate) != "null" {
			pg = new(integrations.Paginate)
			if err := json.Unmarshal(a.Paginate, pg); err != nil {
				return nil, invalid("paginate: the pagination settings are invalid: " + err.Error())
			}
		}
		withResponse := a.WithResponse
		seq := h.c.PaginatePages(ctx, req, pg, nil)
		return h.startPager(func(yield func(any, error) bool) {
			for page, err := range seq {
				if err != nil {
					yield(nil, err)
					return
				}
				recs := page.Records
				if recs == nil {
					recs = []json.RawMessage{}
				}
				v := map[string]any{"records": recs, "next": page.NextPageParam}
				if withResponse && page.Response != nil {
					v["response"] = responseValue(page.Response.Status, page.Response.Header, page.Response.Body, false)
				}
				if !yield(v, nil) {
					return
				}
			}
		}), nil
	case "paginate.next":
		id, err := strconv.Atoi(string(raw))
		if err != nil {
			return nil, invalid("paginate: bad iteration")
		}
		p := h.pagers[id]
		if p == nil {
			return nil, nil
		}
		v, err, ok := p.next()
		if err != nil || !ok {
			p.stop()
			delete(h.pagers, id)
		}
		if err != nil {
			return nil, err
		}
		if !ok {
			return nil, nil
		}
		return v, nil
	case "paginate.stop":
		id, _ := strconv.Atoi(string(raw))
		if p := h.pagers[id]; p != nil {
			p.stop()
			delete(h.pagers, id)
		}
		return nil, nil
	case "getToken":
		conn, err := h.c.ConnectionOf(ctx, "", "", false)
		if err != nil {
			return nil, err
		}
		return token(conn), nil
	case "getConnection":
		var a struct {
			ProviderConfigKey string `json:"providerConfigKey"`
			ConnectionID      string `json:"connectionId"`
			ForceRefresh      bool   `json:"forceRefresh"`
			RefreshToken      bool   `json:"refreshToken"`
		}
		if err := decode(raw, &a); err != nil {
			return nil, err
		}
		conn, err := h.c.ConnectionOf(ctx, a.ProviderConfigKey, a.ConnectionID, a.ForceRefresh)
		if err != nil {
			return nil, err
		}
		return connections.APIFull(conn, true, a.RefreshToken), nil
	case "getIntegration":
		return h.c.IntegrationOf(ctx)
	case "setMetadata", "updateMetadata":
		var m map[string]any
		if err := decode(raw, &m); err != nil || m == nil {
			return nil, invalid(op + ": the metadata must be an object")
		}
		if op == "setMetadata" {
			return nil, h.c.SetMetadata(ctx, m)
		}
		return nil, h.c.UpdateMetadata(ctx, m)
	case "getEnvironmentVariables":
		vars, err := h.c.EnvironmentVariables(ctx)
		if err != nil {
			return nil, err
		}
		out := make([]map[string]string, 0, len(vars))
		for _, k := range slices.Sorted(maps.Keys(vars)) {
			out = append(out, map[string]string{"name": k, "value": vars[k]})
		}
		return out, nil
	case "log":
		var a struct {
			Level   string         `json:"level"`
			Message string         `json:"message"`
			Meta    map[string]any `json:"meta"`
		}
		if err := decode(raw, &a); err != nil {
			return nil, err
		}
		var args []any
		if a.Meta != nil {
			args = []any{"meta", a.Meta}
		}
		return nil, h.log(levelOf(a.Level), a.Message, args...)
	case "triggerAction":
		var a struct {
			ProviderConfigKey string          `json:"providerConfigKey"`
			ConnectionID      string          `json:"connectionId"`
			ActionName        string          `json:"actionName"`
			Input             json.RawMessage `json:"input"`
		}
		if err := decode(raw, &a); err != nil {
			return nil, err
		}
		out, err := h.c.TriggerAction(ctx, a.ProviderConfigKey, a.ConnectionID, a.ActionName, a.Input)
		if err != nil {
			return nil, err
		}
		return json.RawMessage(out), nil
	case "triggerSync", "startSync":
		var a struct {
			ProviderConfigKey string              `json:"providerConfigKey"`
			ConnectionID      string              `json:"connectionId"`
			Name              string              `json:"name"`
			Variant           string              `json:"variant"`
			Syncs             []functions.SyncRef `json:"syncs"`
			Reset             bool                `json:"reset"`
			EmptyCache        bool                `json:"emptyCache"`
		}
		if err := decode(raw, &a); err != nil {
			return nil, err
		}
		if op == "startSync" {
			return nil, h.c.StartSync(ctx, a.ProviderConfigKey, a.ConnectionID, a.Syncs)
		}
		return nil, h.c.TriggerSync(ctx, a.ProviderConfigKey, a.ConnectionID, []functions.SyncRef{{Name: a.Name, Variant: a.Variant}},
			functions.TriggerOptions{Reset: a.Reset, EmptyCache: a.EmptyCache})
	case "getCheckpoint":
		cp, err := h.c.Checkpoint(ctx)
		if err != nil || cp == nil {
			return nil, err
		}
		return cp, nil
	case "saveCheckpoint":
		var cp functions.Checkpoint
		if err := decode(raw, &cp); err != nil || cp == nil {
			return nil, invalid("saveCheckpoint: the checkpoint must be an object of strings, numbers and booleans")
		}
		return nil, h.c.SaveCheckpoint(ctx, cp)
	case "clearCheckpoint":
		return nil, h.c.ClearCheckpoint(ctx)
	case "lock.acquire":
		var a struct {
			Key   string  `json:"key"`
			TTLMs float64 `json:"ttlMs"`
		}
		if err := decode(raw, &a); err != nil {
			return nil, err
		}
		if a.Key == "" || len(a.Key) > 255 {
			return nil, invalid("tryAcquireLock: the key must be 1 to 255 characters")
		}
		ttl := time.Duration(a.TTLMs) * time.Millisecond
		if ttl <= 0 {
			return nil, invalid("tryAcquireLock: ttlMs must be positive")
		}
		k := lockKey{env: h.c.EnvironmentID, integration: h.c.Integration, connection: h.c.ConnectionID, key: a.Key}
		ok := h.rt.locks.acquire(k, h, ttl)
		if ok {
			h.locks = append(h.locks, k)
		}
		return ok, nil
	case "lock.release":
		var a struct {
			Key string `json:"key"`
		}
		if err := decode(raw, &a); err != nil {
			return nil, err
		}
		k := lockKey{env: h.c.EnvironmentID, integration: h.c.Integration, connection: h.c.ConnectionID, key: a.Key}
		return h.rt.locks.release(k, h), nil
	case "fetch":
		return nil, errors.New("uncontrolledFetch is not available: call the provider through nango.proxy")
	}
	if h.sc == nil {
		return nil, fmt.Errorf("nango.%s is available to syncs only", strings.TrimSuffix(op, "Start"))
	}
	return h.doSync(ctx, op, raw)
}

// doSync answers the operations only syncs have.
func (h *host) doSync(ctx context.Context, op string, raw []byte) (any, error) {
	var a struct {
		Model    string            `json:"model"`
		Records  []json.RawMessage `json:"records"`
		IDs      []string          `json:"ids"`
		Cursor   string            `json:"cursor"`
		Strategy string            `json:"strategy"`
	}
	if err := decode(raw, &a); err != nil {
		return nil, err
	}
	switch op {
	case "batchSave":
		return nil, h.sc.Save(ctx, a.Model, a.Records)
	case "batchUpdate":
		return nil, h.sc.Update(ctx, a.Model, a.Records)
	case "batchDelete":
		ids := make([]string, 0, len(a.Records))
		for _, r := range a.Records {
			var rec struct {
				ID json.RawMessage `json:"id"`
			}
			if err := json.Unmarshal(r, &rec); err != nil || len(rec.ID) == 0 {
				return nil, invalid("batchDelete: every record needs an id")
			}
			var s string
			if json.Unmarshal(rec.ID, &s) != nil {
				s = string(rec.ID) // a number, as written
			}
			ids = append(ids, s)
		}
		return nil, h.sc.Delete(ctx, a.Model, ids...)
	case "getRecordsByIds":
		if len(a.IDs) == 0 {
			return map[string]json.RawMessage{}, nil
		}
		return h.sc.Get(ctx, a.Model, a.IDs)
	case "listRecords":
		// The cursor is the run's own iteration, started on the first
		// call (an empty cursor) and continued by the ones after.
		if a.Cursor != "" {
			id, err := strconv.Atoi(strings.TrimPrefix(a.Cursor, "run:"))
			p := h.pagers[id]
			if err != nil || p == nil {
				return nil, invalid("listRecords: unknown cursor")
			}
			return h.listPage(id, p)
		}
		seq := h.sc.ListPages(ctx, a.Model, 100)
		id := h.startPager(func(yield func(any, error) bool) {
			for page, err := range seq {
				if !yield(page, err) || err != nil {
					return
				}
			}
		})
		return h.listPage(id, h.pagers[id])
	case "trackDeletesStart":
		return nil, h.sc.TrackDeletesStart(ctx, a.Model)
	case "trackDeletesEnd":
		if err := h.sc.TrackDeletesEnd(ctx, a.Model); err != nil {
			return nil, err
		}
		// The deletions are applied when the run succeeds: which keys
		// they are is not known yet.
		return map[string]any{"deletedKeys": []string{}}, nil
	case "setMergingStrategy":
		switch a.Strategy {
		case "override":
			return nil, nil
		case "ignore_if_modified_after":
			_ = h.log(slog.LevelWarn, "setMergingStrategy: ignore_if_modified_after is not supported; records are saved with override")
			return nil, nil
		}
		return nil, invalid("setMergingStrategy: the strategy must be override or ignore_if_modified_after")
	}
	return nil, fmt.Errorf("unknown operation %q", op)
}

func (h *host) listPage(id int, p *pager) (any, error) {
	v, err, ok := p.next()
	if err != nil || !ok {
		p.stop()
		delete(h.pagers, id)
	}
	if err != nil {
		return nil, err
	}
	if !ok {
		return map[string]any{"records": []json.RawMessage{}, "next": ""}, nil
	}
	recs := v.([]json.RawMessage)
	next := ""
	if len(recs) == 100 {
		next = "run:" + strconv.Itoa(id)
	} else {
		p.stop()
		delete(h.pagers, id)
	}
	return map[string]any{"records": recs, "next": next}, nil
}

// maxPagers bounds the iterations a run keeps open.
const maxPagers = 1000

func (h *host) startPager(seq iter.Seq2[any, error]) int {
	if len(h.pagers) >= maxPagers { // a run that never finishes its loops
		for id, p := range h.pagers {
			p.stop()
			delete(h.pagers, id)
			break
		}
	}
	next, stop := iter.Pull2(seq)
	h.nextID++
	h.pagers[h.nextID] = &pager{next: func() (any, error, bool) {
		v, err, ok := next()
		return v, err, ok
	}, stop: stop}
	return h.nextID
}

// console writes console.* into the run's log.
func (h *host) console(level, msg string) {
	l := slog.LevelInfo
	switch level {
	case "debug":
		l = slog.LevelDebug
	case "warn":
		l = slog.LevelWarn
	case "error":
		l = slog.LevelError
	}
	_ = h.log(l, msg)
}

// log writes a line into the run's log, at most MaxLogs per run.
func (h *host) log(level slog.Level, msg string, args ...any) error {
	h.logs++
	switch {
	case h.logs == h.rt.opts.MaxLogs+1:
		return h.c.Log(h.ctx, slog.LevelWarn, fmt.Sprintf("the function wrote more than %d log lines; the rest are dropped", h.rt.opts.MaxLogs))
	case h.logs > h.rt.opts.MaxLogs:
		return nil
	}
	return h.c.Log(h.ctx, level, msg, args...)
}

func levelOf(s string) slog.Level {
	switch s {
	case "debug":
		return slog.LevelDebug
	case "warn":
		return slog.LevelWarn
	case "error":
		return slog.LevelError
	}
	return slog.LevelInfo
}

// token is what nango.getToken answers: an OAuth 2 access token, OAuth 1
// token and secret, or the credentials of other modes.
func token(c *connections.Connection) any {
	if c.Credentials == nil {
		return map[string]any{}
	}
	cr := c.Credentials
	switch cr.Type {
	case "OAUTH2", "APP", "OAUTH2_CC":
		if cr.AccessToken != "" {
			return cr.AccessToken
		}
	case "OAUTH1":
		return map[string]string{"oAuthToken": cr.OAuthToken, "oAuthTokenSecret": cr.OAuthTokenSecret}
	}
	return connections.APICredentials(cr, false)
}

// proxyArgs are the arguments of proxy and paginate.
type proxyArgs struct {
	Endpoint          string          `json:"endpoint"`
	Method            string          `json:"method"`
	Headers           map[string]any  `json:"headers"`
	Params            json.RawMessage `json:"params"`
	Retries           float64         `json:"retries"`
	RetryOn           []int           `json:"retryOn"`
	BaseURLOverride   string          `json:"baseUrlOverride"`
	Decompress        bool            `json:"decompress"`
	ProviderConfigKey string          `json:"providerConfigKey"`
	ConnectionID      string          `json:"connectionId"`
	ResponseType      string          `json:"responseType"`
	Data              json.RawMessage `json:"data"`
	Text              *string         `json:"text"`
	B64               *string         `json:"b64"`
	Form              *string         `json:"form"`
	Paginate          json.RawMessage `json:"paginate"`
	WithResponse      bool            `json:"withResponse"`
}

// request is the ProxyRequest of a.
func (a *proxyArgs) request() (functions.ProxyRequest, error) {
	if a.Endpoint == "" {
		return functions.ProxyRequest{}, invalid("proxy: endpoint is required")
	}
	r := functions.ProxyRequest{Method: strings.ToUpper(a.Method), Endpoint: a.Endpoint, BaseURLOverride: a.BaseURLOverride,
		Decompress: a.Decompress, RetryOn: a.RetryOn}
	if r.Method == "" {
		r.Method = http.MethodGet
	}
	if a.Retries < 0 || a.Retries > 10 {
		return r, invalid("proxy: retries must be between 0 and 10")
	}
	r.Retries = int(a.Retries)
	if len(a.Headers) > 0 {
		r.Headers = http.Header{}
		for k, v := range a.Headers {
			if v == nil {
				continue
			}
			r.Headers.Set(k, scalar(v))
		}
	}
	params, err := queryOf(a.Params)
	if err != nil {
		return r, err
	}
	r.Params = params
	switch {
	case a.Text != nil:
		r.Body = []byte(*a.Text)
	case a.B64 != nil:
		b, err := base64.StdEncoding.DecodeString(*a.B64)
		if err != nil {
			return r, invalid("proxy: bad body")
		}
		r.Body = b
	case a.Form != nil:
		r.Body = []byte(*a.Form)
		if r.Headers == nil {
			r.Headers = http.Header{}
		}
		if r.Headers.Get("Content-Type") == "" {
			r.Headers.Set("Content-Type", "application/x-www-form-urlencoded")
		}
	case len(a.Data) > 0 && string(a.Data) != "null":
		r.Data = a.Data
	}
	return r, nil
}

// queryOf reads params: a query string, or an object of scalars and
// arrays of them.
func queryOf(raw json.RawMessage) (url.Values, error) {
	if len(raw) == 0 || string(raw) == "null" {
		return nil, nil
	}
	var s string
	if json.Unmarshal(raw, &s) == nil {
		v, err := url.ParseQuery(strings.TrimPrefix(s, "?"))
		if err != nil {
			return nil, invalid("proxy: params: " + err.Error())
		}
		return v, nil
	}
	var m map[string]any
	if err := json.Unmarshal(raw, &m); err != nil {
		return nil, invalid("proxy: params must be a string or an object")
	}
	out := url.Values{}
	for k, v := range m {
		switch x := v.(type) {
		case nil:
		case []any:
			for _, e := range x {
				out.Add(k, scalar(e))
			}
		default:
			out.Set(k, scalar(x))
		}
	}
	return out, nil
}

// scalar formats a JSON value as JavaScript's String does.
func scalar(v any) string {
	switch x := v.(type) {
	case string:
		return x
	case float64:
		return strconv.FormatFloat(x, 'f', -1, 64)
	case bool:
		return strconv.FormatBool(x)
	case nil:
		return "null"
	}
	b, _ := json.Marshal(v)
	return string(b)
}

func decode(raw []byte, v any) error {
	if err := json.Unmarshal(raw, v); err != nil {
		return invalid("bad arguments: " + err.Error())
	}
	return nil
}

// invalidError is a call of the nango object with bad arguments.
type invalidError struct{ msg string }

func (e *invalidError) Error() string { return e.msg }

func invalid(msg string) error { return &invalidError{msg} }
