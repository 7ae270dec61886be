package main

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/embedauth/connect"
)

// TestRunCutsOffSlowBodies: the server cuts off a client that stops
// sending its body (CONNECT_BODY_WINDOW, CONNECT_BODY_MIN_BYTES) with 408,
// while ordinary requests go through; incoming webhooks over
// CONNECT_INCOMING_WEBHOOK_MAX_BODY are refused with 413.
func TestRunCutsOffSlowBodies(t *testing.T) {
	t.Parallel()
	base, key := startServer(t, map[string]string{"CONNECT_BODY_WINDOW": "100ms", "CONNECT_BODY_MIN_BYTES": "1024",
		"CONNECT_INCOMING_WEBHOOK_MAX_BODY": "1000"})
	if status, body := call(t, "POST", base+"/integrations", key, `{"provider":"notion","unique_key":"notion"}`); status != 200 {
		t.Fatalf("create integration: %d %s", status, body)
	}
	if status, body := call(t, "POST", base+"/webhook/dev/notion", "", strings.Repeat("x", 1001)); status != 413 {
		t.Errorf("incoming webhook over the limit: %d %s", status, body)
	}
	if status, body := call(t, "POST", base+"/webhook/dev/notion", "", strings.Repeat("x", 1000)); status != 200 {
		t.Errorf("incoming webhook at the limit: %d %s", status, body)
	}

	conn, err := net.Dial("tcp", strings.TrimPrefix(base, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if _, err := fmt.Fprintf(conn, "POST /connections HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer %s\r\n"+
		"Content-Type: application/json\r\nContent-Length: 4096\r\n\r\n{", key); err != nil {
		t.Fatal(err)
	}
	// The bound only turns a connection held forever into a failure.
	if err := conn.SetReadDeadline(time.Now().Add(30 * time.Second)); err != nil {
		t.Fatal(err)
	}
	answer, err := io.ReadAll(conn)
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		t.Fatalf("the stalled connection is still open after 30 s (read %q)", answer)
	}
	resp, err := http.ReadResponse(bufio.NewReader(strings.NewReader(string(answer))), nil)
	if err != nil {
		t.Fatalf("answer %q: %v", answer, err)
	}
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusRequestTimeout || !strings.Contains(string(b), `"request_timeout"`) {
		t.Errorf("answer to a stalled body: %d %s", resp.StatusCode, b)
	}
}

func TestStorageSettings(t *testing.T) {
	t.Parallel()
	var cfg connect.Config
	err := storageLimits(envFunc(map[string]string{"CONNECT_WEBHOOK_DELIVERY_RETENTION": "7d", "CONNECT_LOG_RETENTION": "36h",
		"CONNECT_INCOMING_WEBHOOK_MAX_BODY": "65536", "CONNECT_INCOMING_WEBHOOK_QUOTA": "off",
		"CONNECT_INCOMING_WEBHOOK_LOG_INTERVAL": "5m"}), &cfg)
	if err != nil || cfg.Retention.WebhookDeliveries != 7*24*time.Hour || cfg.Retention.Logs != 36*time.Hour ||
		cfg.IncomingWebhooks.MaxBody != 65536 || cfg.IncomingWebhooks.StorageQuota >= 0 || cfg.IncomingWebhooks.LogInterval != 5*time.Minute {
		t.Errorf("storageLimits = %+v %+v, %v", cfg.Retention, cfg.IncomingWebhooks, err)
	}
	for _, bad := range []string{"0", "5", "500ms", "-1m", "soon"} {
		err := storageLimits(envFunc(map[string]string{"CONNECT_INCOMING_WEBHOOK_LOG_INTERVAL": bad}), &connect.Config{})
		if err == nil || !strings.Contains(err.Error(), "CONNECT_INCOMING_WEBHOOK_LOG_INTERVAL") {
			t.Errorf("CONNECT_INCOMING_WEBHOOK_LOG_INTERVAL=%q: %v", bad, err)
		}
	}
	cfg = connect.Config{}
	err = storageLimits(envFunc(map[string]string{"CONNECT_LOG_RETENTION": "forever", "CONNECT_INCOMING_WEBHOOK_QUOTA": "1048576"}), &cfg)
	if err != nil || cfg.Retention.Logs >= 0 || cfg.Retention.WebhookDeliveries != 0 || cfg.IncomingWebhooks.StorageQuota != 1<<20 {
		t.Errorf("storageLimits = %+v %+v, %v", cfg.Retention, cfg.IncomingWebhooks, err)
	}
	window, minBytes, err := bodyProgress(envFunc(map[string]string{"CONNECT_BODY_WINDOW": "5s", "CONNECT_BODY_MIN_BYTES": "100"}))
	if err != nil || window != 5*time.Second || minBytes != 100 {
		t.Errorf("bodyProgress = %v %d, %v", window, minBytes, err)
	}
	if window, minBytes, err := bodyProgress(envFunc(nil)); err != nil || window != 0 || minBytes != 0 {
		t.Errorf("bodyProgress unset = %v %d, %v (want the library's defaults)", window, minBytes, err)
	}
}
