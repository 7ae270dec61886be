package connect_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"time"

	"github.com/embedauth/connect"
	"github.com/embedauth/connect/connections"
	"github.com/embedauth/connect/environments"
	"github.com/embedauth/connect/integrations"
	"github.com/embedauth/connect/store/sqlite"
)

// Create a connect session for an end user and send their browser to
// GitHub: the popup URL that @nangohq/frontend's auth() opens redirects to
// the provider with PKCE and a state bound to the browser by a cookie.
func ExampleService_ConnectSessions() {
	db, err := sqlite.Connect(context.Background(), sqlite.MemoryPath, nil)
	if err != nil {
		panic(err)
	}
	defer db.Close() // after the Service has stopped
	svc, _ := connect.New(connect.Config{
		Store:          db.Store,
		Scheduler:      db.Scheduler,
		EncryptionKeys: []connect.EncryptionKey{{Key: bytes.Repeat([]byte{1}, 32)}},
		PublicURL:      "https://connect.example.com",
	})
	ctx := context.Background()
	env, _ := svc.Environments().Create(ctx, environments.CreateInput{Name: "dev"})
	_, err = svc.Integrations().Create(ctx, env.ID, integrations.CreateInput{Provider: "github", UniqueKey: "github",
		Credentials: &integrations.Credentials{Type: "OAUTH2", ClientID: "my-client", ClientSecret: "my-secret"}})
	if err != nil {
		panic(err)
	}
	sess, err := svc.ConnectSessions().Create(ctx, env.ID, connections.CreateSessionInput{
		Tags: map[string]string{"end_user_id": "u1"}, AllowedIntegrations: []string{"github"}})
	if err != nil {
		panic(err)
	}

	srv := httptest.NewServer(svc.Handler())
	defer srv.Close()
	client := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	resp, err := client.Get(srv.URL + "/oauth/connect/github?connect_session_token=" + sess.Token)
	if err != nil {
		panic(err)
	}
	resp.Body.Close()
	to, _ := url.Parse(resp.Header.Get("Location"))
	q := to.Query()
	fmt.Println(resp.StatusCode, to.Host+to.Path)
	fmt.Println(q.Get("client_id"), q.Get("redirect_uri"), q.Get("code_challenge_method"))
	fmt.Println(len(resp.Cookies()) == 1 && resp.Cookies()[0].HttpOnly)
	// Output:
	// 302 github.com/login/oauth/authorize
	// my-client https://connect.example.com/oauth/callback S256
	// true
}

// Run a maintenance pass by hand: refresh the tokens that expire within the
// next 10 minutes (plus the refresh threshold) and delete expired sessions
// and OAuth flows. A started Service does this every MaintenanceInterval.
func ExampleService_Sweep() {
	db, err := sqlite.Connect(context.Background(), sqlite.MemoryPath, nil)
	if err != nil {
		panic(err)
	}
	defer db.Close() // after the Service has stopped
	svc, _ := connect.New(connect.Config{
		Store:               db.Store,
		Scheduler:           db.Scheduler,
		EncryptionKeys:      []connect.EncryptionKey{{Key: bytes.Repeat([]byte{1}, 32)}},
		MaintenanceInterval: -1,
	})
	res, err := svc.Sweep(context.Background(), 10*time.Minute)
	fmt.Println(res.Refresh.Checked, res.Refresh.Refreshed, err)
	// Output: 0 0 <nil>
}

// Mount the Service under a prefix of the host's mux: PublicURL names the
// prefix, and every address the Service hands out follows it, down to the
// websocketsPath that @nangohq/frontend needs (it resolves that path
// against its host's origin).
func ExampleService_Handler_underPrefix() {
	db, err := sqlite.Connect(context.Background(), sqlite.MemoryPath, nil)
	if err != nil {
		panic(err)
	}
	defer db.Close() // after the Service has stopped
	svc, err := connect.New(connect.Config{
		Store:          db.Store,
		Scheduler:      db.Scheduler,
		EncryptionKeys: []connect.EncryptionKey{{Key: bytes.Repeat([]byte{1}, 32)}},
		PublicURL:      "https://app.example.com/connect",
	})
	if err != nil {
		panic(err)
	}
	mux := http.NewServeMux()
	mux.Handle("/connect/", http.StripPrefix("/connect", svc.Handler()))
	srv := httptest.NewServer(mux)
	defer srv.Close()

	ctx := context.Background()
	env, _ := svc.Environments().Create(ctx, environments.CreateInput{Name: "dev"})
	sess, err := svc.ConnectSessions().Create(ctx, env.ID, connections.CreateSessionInput{Tags: map[string]string{"end_user_id": "u1"}})
	if err != nil {
		panic(err)
	}
	fmt.Println(strings.SplitN(sess.ConnectLink, "?", 2)[0])

	req, _ := http.NewRequest("GET", srv.URL+"/connect/connect/session", nil)
	req.Header.Set("Authorization", "Bearer "+sess.Token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		panic(err)
	}
	defer resp.Body.Close()
	var body struct {
		Data struct {
			WebsocketsPath string `json:"websocketsPath"`
		} `json:"data"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&body); err != nil {
		panic(err)
	}
	fmt.Println(resp.StatusCode, body.Data.WebsocketsPath)
	// Output:
	// https://app.example.com/connect/connect/
	// 200 /connect/
}
