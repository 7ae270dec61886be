package httpapi

import (
	"context"
	"errors"
	"io"
	"net/http"
	"os"
	"sync/atomic"
	"time"

	"github.com/embedauth/connect/store"
)

// RequireBodyProgress returns h with a minimum pace for request bodies: at
// least minBytes, or the end of the body, within each window of time spent
// waiting for it (connect.RequireBodyProgress documents it). A request whose
// body is cut off is answered by WriteError with 408 request_timeout,
// whatever error the handler met.
func RequireBodyProgress(h http.Handler, window time.Duration, minBytes int64) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Body == nil || r.Body == http.NoBody {
			h.ServeHTTP(w, r)
			return
		}
		b := &progressBody{body: r.Body, rc: http.NewResponseController(w), window: window, minBytes: minBytes}
		// A shallow copy: the server keeps its own Request, whose Body
		// tells it after the handler whether the connection can be reused
		// (an unread body too large to discard closes it).
		r = r.WithContext(context.WithValue(r.Context(), progressKey{}, b))
		r.Body = b
		h.ServeHTTP(w, r)
		// A handler that answered without reading the body to its end
		// (a refusal before the body, an unknown route) leaves the server
		// to read the rest before it reuses the connection: within a
		// window too, or a client that stopped sending holds it there.
		b.stop()
	})
}

type progressKey struct{}

// BodyTimedOut reports whether the body of the request of ctx was cut off
// by RequireBodyProgress, or is being cut off: a handler may see the
// request's context end (the server cancels it on the failed read) before
// the read returns.
func BodyTimedOut(ctx context.Context) bool {
	b, ok := ctx.Value(progressKey{}).(*progressBody)
	if !ok {
		return false
	}
	if b.timedOut.Load() {
		return true
	}
	d := b.deadline.Load()
	return b.reading.Load() && d != 0 && time.Now().UnixNano() >= d
}

// errBodyTimeout is the answer to a request whose body was cut off.
var errBodyTimeout = WithStatus(http.StatusRequestTimeout,
	store.Invalid("request_timeout", "The request body was not sent in time: too slowly, or not at all."))

// progressBody is a request body whose reads must make progress.
type progressBody struct {
	body     io.ReadCloser
	rc       *http.ResponseController
	window   time.Duration
	minBytes int64

	// waited is the time spent in Read since the body last brought
	// minBytes; got counts the bytes it brought since then. Only Read
	// uses them.
	waited time.Duration
	got    int64
	// off is set when deadlines no longer apply: the body ended or was
	// closed (a Transport may close it while another goroutine reads), or
	// the ResponseWriter cannot set them.
	off atomic.Bool
	// reading is set during a read under a deadline, deadline (Unix
	// nanoseconds) is that read's; timedOut is set once a read failed on
	// it. BodyTimedOut reads them from the handler's goroutine.
	reading  atomic.Bool
	deadline atomic.Int64
	timedOut atomic.Bool
}

func (b *progressBody) Read(p []byte) (int, error) {
	if b.off.Load() {
		return b.body.Read(p)
	}
	start := time.Now()
	deadline := start.Add(b.window - b.waited)
	if err := b.rc.SetReadDeadline(deadline); err != nil {
		b.off.Store(true) // http.ErrNotSupported: read without deadlines
		return b.body.Read(p)
	}
	b.deadline.Store(deadline.UnixNano())
	b.reading.Store(true)
	n, err := b.body.Read(p)
	if errors.Is(err, os.ErrDeadlineExceeded) {
		b.timedOut.Store(true)
	}
	b.reading.Store(false)
	b.waited += time.Since(start)
	if b.got += int64(n); b.got >= b.minBytes {
		b.got, b.waited = 0, 0
	}
	if errors.Is(err, io.EOF) {
		// The body is complete. The server clears the deadline and
		// starts its read that watches the idle connection for the
		// client going away; a deadline set now would cut that read and
		// cancel the request's context while the handler still works (a
		// proxied call, say).
		b.off.Store(true)
	}
	return n, err
}

// Close closes the body and stops the deadlines (see stop).
func (b *progressBody) Close() error {
	b.stop()
	return b.body.Close()
}

// stop ends the deadlines of reads. Unless the body ended, it leaves one a
// window away: the server reads the rest of an unread body (up to 256 KiB)
// before it reuses the connection, and a client that stopped sending is cut
// off there too.
func (b *progressBody) stop() {
	if b.off.CompareAndSwap(false, true) {
		_ = b.rc.SetReadDeadline(time.Now().Add(b.window))
	}
}
