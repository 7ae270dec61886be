package webhooks_test

import (
	"context"
	"fmt"
	"log"
	"time"

	"github.com/embedauth/connect/egress"
	"github.com/embedauth/connect/environments"
	"github.com/embedauth/connect/jobs"
	"github.com/embedauth/connect/store/sqlite"
	"github.com/embedauth/connect/webhooks"
)

// An Outbox pages through an environment's failed deliveries and sends
// them again, in bounded batches. A connect.Service has one
// (svc.Webhooks()), which also serves it as the /webhooks/deliveries
// routes.
func ExampleOutbox() {
	ctx := context.Background()
	db, err := sqlite.Connect(ctx, sqlite.MemoryPath, nil)
	if err != nil {
		log.Fatal(err)
	}
	defer db.Close()
	st, sched := db.Store, db.Scheduler
	start := time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC)
	env := &environments.Environment{Account: "acme", Name: "prod", CreatedAt: start, UpdatedAt: start}
	if err := st.CreateEnvironment(ctx, env); err != nil {
		log.Fatal(err)
	}
	// Three webhooks whose attempts were used up while the receiver was
	// down.
	for i := range 3 {
		at := start.Add(time.Duration(i) * time.Minute)
		if err := st.CreateDeliveries(ctx, &webhooks.Delivery{ID: fmt.Sprintf("d%d", i), EnvironmentID: env.ID,
			EventID: fmt.Sprintf("e%d", i), Type: webhooks.TypeAuth, IntegrationKey: "github", ConnectionID: "u1",
			URL: "https://hooks.example.com", Body: []byte(`{"type":"auth"}`), Status: webhooks.StatusFailed,
			Attempts: 14, LastError: "status 503", CreatedAt: at, UpdatedAt: at}); err != nil {
			log.Fatal(err)
		}
	}
	// In a Service, the Deliverer's Handle: the job wakes it.
	if err := sched.Register(webhooks.JobKind, func(context.Context, *jobs.Run) error { return nil }); err != nil {
		log.Fatal(err)
	}
	outbox := webhooks.NewOutbox(webhooks.OutboxConfig{Store: st, Scheduler: sched, Transactor: st})

	// The failed ones, newest first, two per page.
	f := webhooks.DeliveryFilter{EnvironmentID: env.ID, Status: webhooks.StatusFailed, Limit: 2}
	for {
		page, err := outbox.List(ctx, f)
		if err != nil {
			log.Fatal(err)
		}
		for _, d := range page.Deliveries {
			fmt.Println(d.ID, d.Status, d.Attempts, d.LastError)
		}
		if page.Next == nil {
			break
		}
		f.After = page.Next
	}
	// All of them again, oldest first, two per call.
	for {
		res, err := outbox.ResendFailed(ctx, webhooks.DeliveryFilter{EnvironmentID: env.ID}, 2)
		if err != nil {
			log.Fatal(err)
		}
		fmt.Println("resent", res.Resent, "more:", res.More)
		if !res.More {
			break
		}
	}
	d, err := outbox.Get(ctx, env.ID, "d0")
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(d.ID, d.Status, d.Attempts)
	// Output:
	// d2 failed 14 status 503
	// d1 failed 14 status 503
	// d0 failed 14 status 503
	// resent 2 more: true
	// resent 1 more: false
	// d0 pending 0
}

// CheckURL applies the webhook address policy to a URL when it is set:
// connect.New checks every environment URL and webhook_url_override with
// it, so that a URL no delivery could reach is refused at once.
func ExampleDeliveryConfig_CheckURL() {
	ctx := context.Background()
	strict := webhooks.DeliveryConfig{} // the default: public addresses only
	own := webhooks.DeliveryConfig{Policy: egress.Policy{AllowPrivateNetworks: true}}
	for _, u := range []string{"https://93.184.215.14/hooks", "http://10.0.0.7/hooks", "https://user:pw@93.184.215.14/hooks"} {
		fmt.Printf("%s\n  default: %v\n  private networks allowed: %v\n", u, strict.CheckURL(ctx, u), own.CheckURL(ctx, u))
	}
	// Output:
	// https://93.184.215.14/hooks
	//   default: <nil>
	//   private networks allowed: <nil>
	// http://10.0.0.7/hooks
	//   default: webhook URL is a private address, which the webhook address policy refuses: a host whose receivers are on its own network allows them with Config.Webhooks.Policy.AllowPrivateNetworks
	//   private networks allowed: <nil>
	// https://user:pw@93.184.215.14/hooks
	//   default: webhook URL must not hold a user name or password: receivers authenticate webhooks by their signature
	//   private networks allowed: webhook URL must not hold a user name or password: receivers authenticate webhooks by their signature
}

// What forwards count against their integration's storage quota
// (IncomingConfig.MaxForward, connect.IncomingWebhooksConfig.StorageQuota):
// a tiny body costs its row, so that a flood of them is bounded as a few
// large ones are.
func ExampleForwardCharge() {
	d := &webhooks.Delivery{Type: webhooks.TypeForward, IntegrationKey: "notion",
		URL: "https://app.example.com/hooks", Body: []byte(`{}`)}
	fmt.Println(d.ForwardCharge())
	fmt.Println(webhooks.ForwardCharge(1<<20, len(d.URL)+len(d.IntegrationKey)))
	// Output:
	// 4203
	// 1118313
}
