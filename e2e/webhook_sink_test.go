package e2e

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
)

// webhookSink is the host application's webhook endpoint for e2e/node/webhook.test.mjs. It keeps
// every POST to /hooks as received (the raw body and the headers, their names lowercased as
// Node's http module gives them to a receiver) and answers 200; GET /received returns them, so
// that the Node test can check them with the published client's verifyIncomingWebhookRequest.
// It does not verify anything itself: the point is that Nango's own code does.
type webhookSink struct {
	srv *httptest.Server

	mu       sync.Mutex
	received []sunkWebhook
}

type sunkWebhook struct {
	Headers map[string]string `json:"headers"`
	Body    string            `json:"body"`
}

func startWebhookSink(t *testing.T) *webhookSink {
	s := &webhookSink{received: []sunkWebhook{}}
	mux := http.NewServeMux()
	mux.HandleFunc("POST /hooks", func(w http.ResponseWriter, r *http.Request) {
		body, err := io.ReadAll(r.Body)
		if err != nil {
			w.WriteHeader(http.StatusBadRequest)
			return
		}
		h := make(map[string]string, len(r.Header))
		for k, v := range r.Header {
			h[strings.ToLower(k)] = strings.Join(v, ", ")
		}
		s.mu.Lock()
		s.received = append(s.received, sunkWebhook{Headers: h, Body: string(body)})
		s.mu.Unlock()
	})
	mux.HandleFunc("GET /received", func(w http.ResponseWriter, r *http.Request) {
		s.mu.Lock()
		b, err := json.Marshal(s.received)
		s.mu.Unlock()
		if err != nil {
			w.WriteHeader(http.StatusInternalServerError)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		w.Write(b)
	})
	s.srv = httptest.NewServer(mux)
	t.Cleanup(s.srv.Close)
	return s
}

func (s *webhookSink) count() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.received)
}
