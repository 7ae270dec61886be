package connect

import (
	"net/http"
	"time"

	"github.com/embedauth/connect/internal/httpapi"
)

// Defaults of RequireBodyProgress.
const (
	// DefaultBodyProgressWindow is the default window of
	// RequireBodyProgress.
	DefaultBodyProgressWindow = 30 * time.Second
	// DefaultBodyProgressMinBytes is the default minBytes of
	// RequireBodyProgress: 16 KiB per 30 seconds, about 550 bytes a
	// second, far below any working network and far above a client that
	// trickles a body to hold a connection open.
	DefaultBodyProgressMinBytes = 16 << 10
)

// RequireBodyProgress returns h with a minimum pace for request bodies: a
// client must send at least minBytes of the body, or its end, within each
// window of time that the handler spends waiting for it. A client that sends
// its headers and then trickles its body (or stops sending) is cut off: the
// handler's read of the body fails with os.ErrDeadlineExceeded, the
// Service's handlers answer 408 request_timeout, and the connection is
// closed. A zero window or minBytes takes DefaultBodyProgressWindow or
// DefaultBodyProgressMinBytes.
//
// Only the time spent waiting for the client counts: a handler that
// streams a large body on (the proxy, to a slow upstream) may read it as
// slowly as it needs, and a body sent at a steady pace may take as long as
// it takes, which http.Server's ReadTimeout, a bound on the whole request,
// would not allow. http.Server's ReadHeaderTimeout still has to bound the
// headers.
//
// It sets the connection's read deadline before each read of the body
// (http.ResponseController.SetReadDeadline), and no more once the body has
// ended (the server then clears it), so it must wrap the handler that the
// http.Server calls (or be
// reached through ResponseWriters that unwrap to it); where the
// ResponseWriter cannot set deadlines, bodies are read without them.
// Mount it around Service.Handler (or any of its handlers) in a host's
// server, as the reference server does:
//
//	srv := &http.Server{
//		Handler:           connect.RequireBodyProgress(svc.Handler(), 0, 0),
//		ReadHeaderTimeout: 10 * time.Second,
//	}
func RequireBodyProgress(h http.Handler, window time.Duration, minBytes int64) http.Handler {
	if window <= 0 {
		window = DefaultBodyProgressWindow
	}
	if minBytes <= 0 {
		minBytes = DefaultBodyProgressMinBytes
	}
	return httpapi.RequireBodyProgress(h, window, minBytes)
}
