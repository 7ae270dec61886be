package jobs_test

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/embedauth/connect/jobs"
)

// A test moves the scheduler's clock, then checks what ran: WaitIdle
// returns once every job due at the clock's time has run, while jobs due
// later stay queued.
func ExampleMemory_WaitIdle() {
	var mu sync.Mutex
	now := time.Date(2026, 1, 1, 9, 0, 0, 0, time.UTC)
	clock := func() time.Time { mu.Lock(); defer mu.Unlock(); return now }
	advance := func(d time.Duration) { mu.Lock(); defer mu.Unlock(); now = now.Add(d) }

	s := jobs.NewMemory(jobs.MemoryOptions{Now: clock})
	if err := s.Register("remind", func(ctx context.Context, run *jobs.Run) error {
		fmt.Println("reminder sent at", clock().Format("15:04"))
		return nil
	}); err != nil {
		panic(err)
	}
	ctx := context.Background()
	if err := s.Start(ctx); err != nil {
		panic(err)
	}
	defer s.Stop(ctx)
	if err := s.Enqueue(ctx, jobs.Job{Kind: "remind", RunAt: clock().Add(time.Hour)}); err != nil {
		panic(err)
	}

	if err := s.WaitIdle(ctx); err != nil { // nothing is due at 09:00
		panic(err)
	}
	fmt.Println("09:00: nothing sent")
	advance(time.Hour)
	if err := s.WaitIdle(ctx); err != nil { // the reminder is due at 10:00
		panic(err)
	}
	// Output:
	// 09:00: nothing sent
	// reminder sent at 10:00
}
