// Package slacktest is a fake of the Slack Web API method that the slack
// example functions call, chat.postMessage, answering as Slack does: 200
// with {"ok": true, ...} or {"ok": false, "error": "..."}. It also
// answers conversations.history?channel=<id> (a channel's messages,
// newest first), for tests that read back what was posted. Tests of the
// functions, and of hosts that run them, point a slack provider's base
// URL at a [Server]'s URL.
package slacktest

import (
	"encoding/json"
	"fmt"
	"io"
	"mime"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"strings"
	"sync"
	"unicode/utf8"
)

// GeneralID and GeneralName are the channel every Server starts with.
const (
	GeneralID   = "C0GENERAL"
	GeneralName = "general"
)

// MaxText is the longest text chat.postMessage accepts, in characters.
const MaxText = 40000

// Message is a message the Server accepted.
type Message struct {
	Channel string // the channel's id
	Text    string
	TS      string
}

// Request is a request the Server received.
type Request struct {
	Method        string
	Path          string
	ContentType   string
	Authorization string
	Body          string
}

// Server is a fake Slack Web API. Create it with NewServer; Close it when
// done.
type Server struct {
	// URL is the Web API's base URL, ending in /api (Slack's
	// https://slack.com/api).
	URL string

	srv   *httptest.Server
	token string

	mu       sync.Mutex
	channels map[string]string // id by name; guarded by mu
	messages []Message         // guarded by mu
	requests []Request         // guarded by mu
	ts       int               // guarded by mu
	limited  int               // guarded by mu
}

// NewServer starts a fake Slack that accepts only the bot token token
// (sent as "Bearer <token>"), with the channel #general.
func NewServer(token string) *Server {
	s := &Server{token: token, channels: map[string]string{GeneralName: GeneralID}}
	s.srv = httptest.NewServer(http.HandlerFunc(s.serve))
	s.URL = s.srv.URL + "/api"
	return s
}

// Close stops the server.
func (s *Server) Close() { s.srv.Close() }

// AddChannel adds a channel.
func (s *Server) AddChannel(id, name string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.channels[name] = id
}

// Messages returns the messages posted so far.
func (s *Server) Messages() []Message {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.messages)
}

// RateLimit makes the next n requests answer as a rate-limited Slack
// does: 429 with Retry-After: 30 and {"ok": false, "error": "ratelimited"}.
func (s *Server) RateLimit(n int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.limited = n
}

// Requests returns the requests received so far.
func (s *Server) Requests() []Request {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.requests)
}

func (s *Server) serve(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(io.LimitReader(r.Body, 1<<20))
	s.mu.Lock()
	s.requests = append(s.requests, Request{Method: r.Method, Path: r.URL.Path, ContentType: r.Header.Get("Content-Type"),
		Authorization: r.Header.Get("Authorization"), Body: string(body)})
	limited := s.limited > 0
	if limited {
		s.limited--
	}
	s.mu.Unlock()
	if limited {
		w.Header().Set("Content-Type", "application/json; charset=utf-8")
		w.Header().Set("Retry-After", "30")
		w.WriteHeader(http.StatusTooManyRequests)
		_ = json.NewEncoder(w).Encode(map[string]any{"ok": false, "error": "ratelimited"})
		return
	}

	method := strings.TrimPrefix(r.URL.Path, "/api/")
	if method != "chat.postMessage" && method != "conversations.history" {
		answer(w, map[string]any{"ok": false, "error": "unknown_method"})
		return
	}
	switch a := r.Header.Get("Authorization"); {
	case a == "":
		answer(w, map[string]any{"ok": false, "error": "not_authed"})
		return
	case s.token != "" && a != "Bearer "+s.token:
		answer(w, map[string]any{"ok": false, "error": "invalid_auth"})
		return
	}
	if method == "conversations.history" {
		s.history(w, r.URL.Query().Get("channel"))
		return
	}
	if r.Method != http.MethodPost {
		answer(w, map[string]any{"ok": false, "error": "method_not_supported_for_channel_type"})
		return
	}
	var in struct {
		Channel string `json:"channel"`
		Text    string `json:"text"`
	}
	mt, _, _ := mime.ParseMediaType(r.Header.Get("Content-Type"))
	switch mt {
	case "application/json":
		if err := json.Unmarshal(body, &in); err != nil {
			answer(w, map[string]any{"ok": false, "error": "invalid_json"})
			return
		}
	default:
		q, _ := url.ParseQuery(string(body))
		in.Channel, in.Text = q.Get("channel"), q.Get("text")
	}
	switch {
	case in.Channel == "":
		answer(w, map[string]any{"ok": false, "error": "channel_not_found"})
		return
	case in.Text == "":
		answer(w, map[string]any{"ok": false, "error": "no_text"})
		return
	case utf8.RuneCountInString(in.Text) > MaxText:
		answer(w, map[string]any{"ok": false, "error": "msg_too_long"})
		return
	}
	s.mu.Lock()
	id := ""
	for name, cid := range s.channels {
		if in.Channel == cid || strings.TrimPrefix(in.Channel, "#") == name {
			id = cid
		}
	}
	if id == "" {
		s.mu.Unlock()
		answer(w, map[string]any{"ok": false, "error": "channel_not_found"})
		return
	}
	s.ts++
	m := Message{Channel: id, Text: in.Text, TS: fmt.Sprintf("1700000000.%06d", s.ts)}
	s.messages = append(s.messages, m)
	s.mu.Unlock()
	answer(w, map[string]any{"ok": true, "channel": m.Channel, "ts": m.TS,
		"message": map[string]any{"type": "message", "text": m.Text, "ts": m.TS, "bot_id": "B0BOT"}})
}

// history answers conversations.history?channel=<id>: the channel's
// messages, newest first.
func (s *Server) history(w http.ResponseWriter, channel string) {
	s.mu.Lock()
	known := false
	for _, id := range s.channels {
		known = known || id == channel
	}
	msgs := []map[string]any{}
	for i := len(s.messages) - 1; i >= 0; i-- {
		if m := s.messages[i]; m.Channel == channel {
			msgs = append(msgs, map[string]any{"type": "message", "text": m.Text, "ts": m.TS, "bot_id": "B0BOT"})
		}
	}
	s.mu.Unlock()
	if !known {
		answer(w, map[string]any{"ok": false, "error": "channel_not_found"})
		return
	}
	answer(w, map[string]any{"ok": true, "messages": msgs, "has_more": false})
}

// answer writes Slack's 200 JSON answer.
func answer(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	_ = json.NewEncoder(w).Encode(v)
}
