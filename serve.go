package connect

import (
	"context"
	"errors"
	"net"
	"net/http"
	"time"
)

// Defaults of Serve and ListenAndServe.
const (
	// DefaultShutdownTimeout is how long Serve waits, once its context
	// ends, for the requests in flight and then for the Service's
	// background work to end.
	DefaultShutdownTimeout = 10 * time.Second
	// DefaultReadHeaderTimeout and DefaultIdleTimeout replace a zero
	// http.Server.ReadHeaderTimeout and IdleTimeout in Serve.
	DefaultReadHeaderTimeout = 10 * time.Second
	DefaultIdleTimeout       = 2 * time.Minute
)

// ListenAndServe listens on srv.Addr (":http" when empty) and calls Serve.
func (s *Service) ListenAndServe(ctx context.Context, srv *http.Server) error {
	addr := srv.Addr
	if addr == "" {
		addr = ":http"
	}
	ln, err := (&net.ListenConfig{}).Listen(ctx, "tcp", addr)
	if err != nil {
		return err
	}
	return s.Serve(ctx, srv, ln)
}

// Serve runs the Service behind srv on ln until ctx ends, then shuts both
// down in the order that loses nothing: srv stops accepting connections
// and finishes the requests in flight (http.Server.Shutdown), then the
// Service stops (Stop), each within DefaultShutdownTimeout. It starts the
// Service first (Start, which checks the encryption keys) and serves only
// once it has started. It returns nil after a shutdown that ctx asked for,
// and otherwise the error that ended it, once everything has stopped.
//
// srv is the host's, to configure as it likes; Serve fills in what it
// leaves unset so that a slow or idle client cannot hold connections: a
// nil Handler serves s.Handler(); the handler is wrapped in
// RequireBodyProgress with its defaults (a client must keep sending its
// request body); a zero ReadHeaderTimeout and IdleTimeout become
// DefaultReadHeaderTimeout and DefaultIdleTimeout. With srv.TLSConfig set
// (its certificates included), Serve serves TLS.
func (s *Service) Serve(ctx context.Context, srv *http.Server, ln net.Listener) error {
	if srv.Handler == nil {
		srv.Handler = s.Handler()
	}
	srv.Handler = RequireBodyProgress(srv.Handler, 0, 0)
	if srv.ReadHeaderTimeout == 0 {
		srv.ReadHeaderTimeout = DefaultReadHeaderTimeout
	}
	if srv.IdleTimeout == 0 {
		srv.IdleTimeout = DefaultIdleTimeout
	}
	if err := s.Start(ctx); err != nil {
		ln.Close()
		return err
	}
	errc := make(chan error, 1)
	go func() {
		if srv.TLSConfig != nil {
			errc <- srv.ServeTLS(ln, "", "")
		} else {
			errc <- srv.Serve(ln)
		}
	}()
	var err error
	select {
	case err = <-errc:
	case <-ctx.Done():
	}
	shutdown, cancel := context.WithTimeout(context.WithoutCancel(ctx), DefaultShutdownTimeout)
	defer cancel()
	serr := srv.Shutdown(shutdown)
	if err == nil {
		if e := <-errc; !errors.Is(e, http.ErrServerClosed) {
			err = e
		}
	}
	return errors.Join(err, serr, s.Stop(shutdown))
}
