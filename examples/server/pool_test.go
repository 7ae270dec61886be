package main

import (
	"fmt"
	"io"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/embedauth/connect/internal/pgtest"
)

// TestPostgresPoolKeepsSessions: the server on Postgres, under concurrent
// GET /connections/{id} with credentials (as @nangohq/node's
// getConnection), opens its pool's sessions once: once warm, a run of
// requests neither opens a Postgres session nor closes one, and the pool
// stays within CONNECT_DATABASE_MAX_CONNS.
func TestPostgresPoolKeepsSessions(t *testing.T) {
	t.Parallel()
	const maxConns, clients = 6, 12
	dsn := freshDatabase(t)
	u, err := url.Parse(dsn)
	if err != nil {
		t.Fatal(err)
	}
	dbName := strings.TrimPrefix(u.Path, "/")
	key, _ := newKey(t)
	apiKey := "pool-test-key-0123456789"
	base, stop := serve(t, map[string]string{
		"DATABASE_URL": dsn, "CONNECT_ENCRYPTION_KEY": key, "CONNECT_API_KEY": apiKey,
		"CONNECT_DATABASE_MAX_CONNS": fmt.Sprint(maxConns),
		"CONNECT_RATE_LIMIT":         "1000000", // the Postgres rate limiter stays in the path
	})
	t.Cleanup(func() {
		if err := stop(); err != nil {
			t.Error(err)
		}
	})
	if status, body := call(t, "POST", base+"/integrations", apiKey, `{"provider":"jira-basic","unique_key":"zd"}`); status != 200 {
		t.Fatalf("create integration: %d %s", status, body)
	}
	if status, body := call(t, "POST", base+"/connections", apiKey, `{"provider_config_key":"zd","connection_id":"c1",
		"credentials":{"type":"BASIC","username":"ann","password":"s3cret-pass"},"connection_config":{"subdomain":"acme"}}`); status != 201 {
		t.Fatalf("import connection: %d %s", status, body)
	}

	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: clients}}
	defer client.CloseIdleConnections()
	// load sends clients concurrent streams of n requests each.
	load := func(n int) {
		var wg sync.WaitGroup
		errs := make(chan error, clients)
		for range clients {
			wg.Go(func() {
				for range n {
					req, _ := http.NewRequest("GET", base+"/connections/c1?provider_config_key=zd", nil)
					req.Header.Set("Authorization", "Bearer "+apiKey)
					resp, err := client.Do(req)
					if err != nil {
						errs <- err
						return
					}
					io.Copy(io.Discard, resp.Body)
					resp.Body.Close()
					if resp.StatusCode != 200 {
						errs <- fmt.Errorf("status %d", resp.StatusCode)
						return
					}
				}
			})
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			t.Fatal(err)
		}
	}
	// sessions lists the backends connected to the server's database.
	sessions := func() []int {
		rows, err := pgtest.DB(t).QueryContext(t.Context(), "SELECT pid FROM pg_stat_activity WHERE datname = $1 ORDER BY pid", dbName)
		if err != nil {
			t.Fatal(err)
		}
		defer rows.Close()
		var pids []int
		for rows.Next() {
			var pid int
			if err := rows.Scan(&pid); err != nil {
				t.Fatal(err)
			}
			pids = append(pids, pid)
		}
		if err := rows.Err(); err != nil {
			t.Fatal(err)
		}
		return pids
	}

	// Warm up: twice as many clients as sessions open them all.
	var warm []int
	for range 20 {
		load(20)
		if warm = sessions(); len(warm) >= maxConns {
			break
		}
	}
	load(100)
	after := sessions()
	var opened []int
	for _, pid := range after {
		if !slices.Contains(warm, pid) {
			opened = append(opened, pid)
		}
	}
	if len(warm) > maxConns || len(opened) > 0 || len(after) != len(warm) {
		t.Errorf("sessions after warm-up %v, after %d more requests %v: %d opened, want none (and at most %d sessions)",
			warm, clients*100, after, len(opened), maxConns)
	}
}
