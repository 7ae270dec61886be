package connect_test

import (
	"context"
	"net"
	"net/http"
	"testing"
	"time"

	"github.com/embedauth/connect"
)

// TestServe: Serve starts the Service, serves until its context ends,
// then stops the server and the Service; it fills in the timeouts a host
// leaves unset.
func TestServe(t *testing.T) {
	backends(t, func(t *testing.T, b *backend) {
		bu := setup(t, b)
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		srv := &http.Server{IdleTimeout: time.Minute}
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		done := make(chan error, 1)
		go func() { done <- bu.svc.Serve(ctx, srv, ln) }()

		resp, err := http.Get("http://" + ln.Addr().String() + "/health")
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("GET /health = %d", resp.StatusCode)
		}
		if srv.ReadHeaderTimeout != connect.DefaultReadHeaderTimeout || srv.IdleTimeout != time.Minute {
			t.Errorf("ReadHeaderTimeout %v, IdleTimeout %v: want the default and the host's own", srv.ReadHeaderTimeout, srv.IdleTimeout)
		}
		// Started: a second Start is refused.
		if err := bu.svc.Start(context.Background()); err == nil {
			t.Fatal("Start succeeded while Serve runs the Service")
		}

		cancel()
		select {
		case err := <-done:
			if err != nil {
				t.Fatalf("Serve after its context ended: %v", err)
			}
		case <-time.After(30 * time.Second):
			t.Fatal("Serve did not return after its context ended")
		}
		if _, err := http.Get("http://" + ln.Addr().String() + "/health"); err == nil {
			t.Error("the server still answers after Serve returned")
		}
		// Stopped: it starts again.
		if err := bu.svc.Start(context.Background()); err != nil {
			t.Fatalf("Start after Serve returned: %v", err)
		}
		if err := bu.svc.Stop(context.Background()); err != nil {
			t.Fatal(err)
		}
	})
}

// TestListenAndServeAddressInUse: an address that cannot be listened on
// is an error, and the Service is not started.
func TestListenAndServeAddressInUse(t *testing.T) {
	bu := setup(t, sqliteBackend(t))
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	if err := bu.svc.ListenAndServe(context.Background(), &http.Server{Addr: ln.Addr().String()}); err == nil {
		t.Fatal("ListenAndServe on an address in use succeeded")
	}
	if err := bu.svc.Start(context.Background()); err != nil {
		t.Fatalf("the Service was started by the failed ListenAndServe: %v", err)
	}
	_ = bu.svc.Stop(context.Background())
}
