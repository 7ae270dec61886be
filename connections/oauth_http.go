package connections

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"errors"
	"html/template"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/coder/websocket"

	"github.com/embedauth/connect/internal/httpapi"
	"github.com/embedauth/connect/store"
)

// Browser messages of the callback page, posted to the popup's opener and
// on the BroadcastChannel CallbackChannel (the connect UI listens; the
// frontend client relies on the WebSocket instead).
const (
	CallbackChannel     = "nango-oauth-callback"
	CallbackSuccessType = "nango_oauth_callback_success"
	CallbackErrorType   = "nango_oauth_callback_error"
	CallbackAckType     = "nango_oauth_callback_ack"
	wsPollInterval      = time.Second
	wsPingInterval      = 20 * time.Second
	maxClientIDLength   = 200
)

// oauthRoutes registers the OAuth flow routes on mux.
func (ss *Sessions) oauthRoutes(mux *http.ServeMux) {
	mux.HandleFunc("GET /oauth/connect/{integration}", ss.serveOAuthConnect)
	mux.HandleFunc("GET /oauth/callback", ss.serveOAuthCallback)
	mux.Handle("GET /oauth/status/{client}", ss.public(ss.flowStatus))
	mux.HandleFunc("OPTIONS /oauth/status/{client}", Preflight)
}

// serveOAuthConnect is the popup's GET /oauth/connect/{integration}: it
// starts the flow and redirects to the provider with the cookie that binds
// the flow to this browser, or shows an error page (400) that also tells
// the opener and the WebSocket waiting on ws_client_id.
func (ss *Sessions) serveOAuthConnect(w http.ResponseWriter, r *http.Request) {
	key := r.PathValue("integration")
	q, err := url.ParseQuery(r.URL.RawQuery)
	if err != nil {
		ss.connectFailed(w, r, nil, "", key, flowErr(FlowErrURLParam, "The query string cannot be parsed."))
		return
	}
	clientID := q.Get("ws_client_id")
	if len(clientID) > maxClientIDLength || strings.ContainsFunc(clientID, func(r rune) bool { return r < 0x21 || r > 0x7e }) {
		ss.connectFailed(w, r, nil, "", key, flowErr(FlowErrURLParam, "ws_client_id must be at most %d printable ASCII characters.", maxClientIDLength))
		return
	}
	sess, _, err := ss.querySession(w, r, q)
	if err != nil {
		ss.connectFailed(w, r, nil, clientID, key, err)
		return
	}
	in := OAuthStartInput{IntegrationKey: key, ConnectionID: q.Get("connection_id"), ClientID: clientID, UserScope: q.Get("user_scope")}
	if len(in.UserScope) > MaxConfigValueLength {
		ss.connectFailed(w, r, sess, clientID, key, flowErr(FlowErrURLParam, "user_scope is too long."))
		return
	}
	if in.Params, err = ParseParams(r.URL.RawQuery); err == nil {
		if in.AuthorizationParams, err = ParseBracketQuery(r.URL.RawQuery, "authorization_params"); err == nil {
			var creds map[string]string
			if creds, err = ParseBracketQuery(r.URL.RawQuery, "credentials"); err == nil {
				in.OAuthClientID, in.OAuthClientSecret = creds[ConfigOAuthClientIDOverride], creds[ConfigOAuthClientSecretOverride]
			}
		}
	}
	if err != nil {
		ss.connectFailed(w, r, sess, clientID, key, err)
		return
	}
	start, err := ss.StartOAuth(r.Context(), sess, in)
	if err != nil {
		ss.connectFailed(w, r, sess, clientID, key, err)
		return
	}
	h := w.Header()
	h.Set("Cache-Control", "no-store")
	// The popup's URL carries the session token: no Referer may take it
	// to the provider.
	h.Set("Referrer-Policy", "no-referrer")
	http.SetCookie(w, start.Cookie)
	http.Redirect(w, r, start.RedirectURL, http.StatusFound)
}

// IsPopupPath reports whether a request for path is one of the OAuth
// popup's pages, GET /oauth/connect/{integration} and GET /oauth/callback,
// which answer every error with the callback page (see WritePopupError).
func IsPopupPath(method, path string) bool {
	return method == http.MethodGet && (strings.HasPrefix(path, "/oauth/connect/") || path == "/oauth/callback")
}

// WritePopupError answers a popup page refused before it was routed (a
// malformed URL) with the callback page, status 400: url_param_err on
// /oauth/connect, callback_err on /oauth/callback. The message must not
// hold the request's text.
func WritePopupError(w http.ResponseWriter, path, message string) {
	typ := FlowErrURLParam
	if path == "/oauth/callback" {
		typ = FlowErrCallback
	}
	writeCallbackPage(w, http.StatusBadRequest, &StatusData{Status: "error", Error: &StatusErr{Type: typ, Message: message}})
}

// connectFailed answers a failed /oauth/connect with the error page. When
// the session is known and the browser named a client id, the failure is
// stored as a finished flow, so that the WebSocket and the status poll of
// any instance report it; otherwise only this process's WebSockets hear
// of it.
func (ss *Sessions) connectFailed(w http.ResponseWriter, r *http.Request, sess *Session, clientID, key string, err error) {
	fe := AsFlowError(err)
	if fe.Type == FlowErrUnknown {
		ss.cfg.Logger.ErrorContext(r.Context(), "starting an OAuth flow failed", "integration", key, "err", err)
	}
	d := &StatusData{Status: "error", ProviderConfigKey: key, Error: &StatusErr{Type: fe.Type, Message: fe.Message}}
	if sess != nil && clientID != "" {
		now := ss.conns.nowUTC()
		f := &OAuthFlow{EnvironmentID: sess.EnvironmentID, SessionID: sess.ID, StateHash: hashState(randomToken()),
			BrowserHash: hashState(randomToken()), ClientID: clientID, IntegrationKey: key,
			Status: FlowFailed, ErrorType: fe.Type, ErrorMessage: fe.Message, CreatedAt: now, ExpiresAt: now.Add(ss.cfg.FlowTTL)}
		if serr := ss.cfg.Store.CreateOAuthFlow(context.WithoutCancel(r.Context()), f); serr != nil {
			ss.cfg.Logger.WarnContext(r.Context(), "storing a failed OAuth flow start failed", "err", serr)
		}
	}
	ss.hub.signal(clientID, d)
	status := fe.Status
	if status < 400 || status >= 500 && fe.Type != FlowErrUnknown {
		status = http.StatusBadRequest
	}
	writeCallbackPage(w, status, d)
}

// serveOAuthCallback is the provider's redirect back: GET /oauth/callback.
func (ss *Sessions) serveOAuthCallback(w http.ResponseWriter, r *http.Request) {
	q, err := url.ParseQuery(r.URL.RawQuery)
	if err != nil {
		writeCallbackPage(w, http.StatusBadRequest, &StatusData{Status: "error",
			Error: &StatusErr{Type: FlowErrCallback, Message: "The callback's query string cannot be parsed."}})
		return
	}
	state := q.Get("state")
	if state == "" {
		state = q.Get("oauth_token")
	}
	if state != "" && len(state) <= 2048 {
		// The cookie has done its job, whatever the outcome.
		http.SetCookie(w, ss.ClearCookie(state))
	}
	res, err := ss.Callback(r.Context(), q, r.Cookies())
	if err != nil {
		fe := AsFlowError(err)
		d := &StatusData{Status: "error", Error: &StatusErr{Type: fe.Type, Message: fe.Message}}
		if res != nil && res.Flow != nil {
			d.ProviderConfigKey, d.ConnectionID = res.Flow.IntegrationKey, res.Flow.ConnectionID
		}
		status := fe.Status
		if status < 400 || status >= 500 && fe.Type != FlowErrUnknown {
			status = http.StatusBadRequest
		}
		writeCallbackPage(w, status, d)
		return
	}
	writeCallbackPage(w, http.StatusOK, statusOf(res.Flow, ss.conns.nowUTC()))
}

// flowStatus is GET /oauth/status/{client}: the status of the session's
// flow with the client id, for browsers that cannot hold a WebSocket.
func (ss *Sessions) flowStatus(w http.ResponseWriter, r *http.Request) error {
	sess, _, err := ss.bearerSession(w, r)
	if err != nil {
		return err
	}
	id := r.PathValue("client")
	if id == "" || len(id) > maxClientIDLength {
		return httpapi.InvalidQuery("client", "must be a flow's client id")
	}
	d, err := ss.FlowStatus(r.Context(), sess, id)
	if err != nil {
		return err
	}
	w.Header().Set("Cache-Control", "no-store")
	httpapi.WriteJSON(w, http.StatusOK, map[string]*StatusData{"data": d})
	return nil
}

// callbackMessage is what the callback page posts.
type callbackMessage struct {
	Type    string `json:"type"`
	Payload any    `json:"payload"`
}

var callbackPage = template.Must(template.New("callback").Parse(`<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width,initial-scale=1">
<title>{{if .OK}}Connected{{else}}Connection failed{{end}}</title>
<style nonce="{{.Nonce}}">body{font:16px/1.5 system-ui,sans-serif;margin:0;display:flex;min-height:100vh;align-items:center;justify-content:center;background:#fafafa;color:#111}
main{max-width:28rem;padding:2rem;text-align:center}h1{font-size:1.25rem}p{color:#555;word-wrap:break-word}
@media (prefers-color-scheme:dark){body{background:#111;color:#eee}p{color:#bbb}}</style></head>
<body><main>{{if .OK}}<h1>Connected</h1><p>You can close this window.</p>{{else}}<h1>The connection failed</h1><p>{{.Message}}</p><p><small>{{.Type}}</small></p>{{end}}</main>
<script nonce="{{.Nonce}}">
(function () {
  var msg = {{.JSON}};
  function ack(e) { if (e && e.data && e.data.type === "` + CallbackAckType + `") { window.close(); } }
  window.addEventListener("message", ack);
  try { var bc = new BroadcastChannel("` + CallbackChannel + `"); bc.onmessage = ack; bc.postMessage(msg); } catch (e) {}
  try { if (window.opener) { window.opener.postMessage(msg, "*"); } } catch (e) {}
  if (msg.type === "` + CallbackSuccessType + `") { setTimeout(function () { window.close(); }, 500); }
})();
</script></body></html>
`))

// writeCallbackPage answers the page that ends a popup: it shows the
// outcome, posts it to the opener and on the BroadcastChannel, and closes
// itself on acknowledgement (or 500 ms after a success). Its only script is
// inline, allowed by a per-response nonce.
func writeCallbackPage(w http.ResponseWriter, status int, d *StatusData) {
	var msg callbackMessage
	ok := d.Status == "success"
	if ok {
		msg = callbackMessage{Type: CallbackSuccessType, Payload: map[string]any{
			"providerConfigKey": d.ProviderConfigKey, "connectionId": d.ConnectionID, "isPending": d.IsPending}}
	} else {
		msg = callbackMessage{Type: CallbackErrorType, Payload: map[string]string{"message": d.Error.Message, "errorType": d.Error.Type}}
	}
	nonceBytes := make([]byte, 18)
	if _, err := rand.Read(nonceBytes); err != nil {
		panic(err)
	}
	nonce := base64.StdEncoding.EncodeToString(nonceBytes)
	h := w.Header()
	h.Set("Content-Type", "text/html; charset=utf-8")
	h.Set("Cache-Control", "no-store")
	h.Set("Referrer-Policy", "no-referrer")
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Content-Security-Policy", "default-src 'none'; script-src 'nonce-"+nonce+"'; style-src 'nonce-"+nonce+"'; base-uri 'none'; form-action 'none'")
	w.WriteHeader(status)
	data := struct {
		OK            bool
		Message, Type string
		Nonce         string
		JSON          callbackMessage
	}{OK: ok, Nonce: nonce, JSON: msg}
	if !ok {
		data.Message, data.Type = d.Error.Message, d.Error.Type
	}
	_ = callbackPage.Execute(w, data)
}

// IsWebSocketUpgrade reports whether r asks to become a WebSocket.
func IsWebSocketUpgrade(r *http.Request) bool {
	return r.Method == http.MethodGet && strings.EqualFold(r.Header.Get("Upgrade"), "websocket") &&
		headerHasToken(r.Header, "Connection", "upgrade")
}

func headerHasToken(h http.Header, name, token string) bool {
	for _, v := range h.Values(name) {
		for _, t := range strings.Split(v, ",") {
			if strings.EqualFold(strings.TrimSpace(t), token) {
				return true
			}
		}
	}
	return false
}

// WebsocketsPath is the path the WebSocket of WebSocketHandler is served at,
// relative to the handler's mount point (SessionsConfig.WebsocketsPath).
func (ss *Sessions) WebsocketsPath() string { return ss.cfg.WebsocketsPath }

// PublicWebsocketsPath is the path of the WebSocket as browsers reach it:
// the path of SessionsConfig.PublicURL followed by WebsocketsPath. It is
// the websocketsPath that GET /connect/session announces and that
// @nangohq/frontend needs under a prefix, as the client resolves it against
// its host's origin (an absolute path drops the host's own path).
func (ss *Sessions) PublicWebsocketsPath() string { return ss.wsPublicPath }

// wsFrame is a frame the frontend client reads.
type wsFrame struct {
	MessageType       string `json:"message_type"`
	WSClientID        string `json:"ws_client_id,omitempty"`
	ProviderConfigKey string `json:"provider_config_key,omitempty"`
	ConnectionID      string `json:"connection_id,omitempty"`
	IsPending         *bool  `json:"is_pending,omitempty"`
	ErrorType         string `json:"error_type,omitempty"`
	ErrorDesc         string `json:"error_desc,omitempty"`
}

// WebSocketHandler serves the WebSocket of @nangohq/frontend's auth(): it
// sends {"message_type":"connection_ack","ws_client_id":<uuid>}, then, once
// the flow the browser started with that ws_client_id ends (on any
// instance), one success or error frame, and closes. Any origin may open
// it: it carries no credentials, and it only reports the outcome of the
// flow whose unguessable id it handed out.
func (ss *Sessions) WebSocketHandler() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		c, err := websocket.Accept(w, r, &websocket.AcceptOptions{InsecureSkipVerify: true})
		if err != nil {
			return // Accept has answered the client
		}
		defer c.CloseNow()
		c.SetReadLimit(4 << 10)
		ctx, cancel := context.WithTimeout(r.Context(), ss.cfg.FlowTTL+time.Minute)
		defer cancel()
		ctx = c.CloseRead(ctx)  // the client sends nothing; its close ends ctx
		id := newConnectionID() // a random UUID
		woken, stop := ss.hub.wait(id)
		defer stop()
		if err := writeFrame(ctx, c, wsFrame{MessageType: "connection_ack", WSClientID: id}); err != nil {
			return
		}
		d, err := ss.awaitFlow(ctx, c, id, woken)
		if err != nil {
			if errors.Is(err, context.DeadlineExceeded) {
				_ = writeFrame(context.Background(), c, wsFrame{MessageType: "error", ErrorType: FlowErrState,
					ErrorDesc: "The authorization was not completed in time: start the connection again."})
				c.Close(websocket.StatusNormalClosure, "")
			}
			return
		}
		f := wsFrame{MessageType: "success", ProviderConfigKey: d.ProviderConfigKey, ConnectionID: d.ConnectionID}
		if d.Status == "success" {
			pending := d.IsPending
			f.IsPending = &pending
		} else {
			f.MessageType, f.ErrorType, f.ErrorDesc = "error", d.Error.Type, d.Error.Message
		}
		wctx, wcancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
		defer wcancel()
		if err := writeFrame(wctx, c, f); err == nil {
			c.Close(websocket.StatusNormalClosure, "")
		}
	})
}

// awaitFlow waits for the flow of client id to end: woken by this
// process's hub, or seen in the Store by polling.
func (ss *Sessions) awaitFlow(ctx context.Context, c *websocket.Conn, id string, woken <-chan *StatusData) (*StatusData, error) {
	poll := time.NewTicker(wsPollInterval)
	defer poll.Stop()
	ping := time.NewTicker(wsPingInterval)
	defer ping.Stop()
	for {
		select {
		case d := <-woken:
			if d != nil {
				return d, nil
			}
		case <-poll.C:
		case <-ping.C:
			pctx, cancel := context.WithTimeout(ctx, 10*time.Second)
			err := c.Ping(pctx)
			cancel()
			if err != nil {
				return nil, err
			}
			continue
		case <-ctx.Done():
			return nil, ctx.Err()
		}
		f, err := ss.cfg.Store.GetOAuthFlowByClientID(ctx, id, 0)
		if errors.Is(err, store.ErrNotFound) {
			continue
		}
		if err != nil {
			if ctx.Err() != nil {
				return nil, ctx.Err()
			}
			ss.cfg.Logger.WarnContext(ctx, "WebSocket: reading the OAuth flow failed", "err", err)
			continue
		}
		if d := statusOf(f, ss.conns.nowUTC()); d.Status != "pending" {
			return d, nil
		}
	}
}

func writeFrame(ctx context.Context, c *websocket.Conn, f wsFrame) error {
	b, err := json.Marshal(f)
	if err != nil {
		return err
	}
	return c.Write(ctx, websocket.MessageText, b)
}
