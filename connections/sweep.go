package connections

import (
	"context"
	"errors"
	"time"

	"github.com/embedauth/connect/integrations"
	"github.com/embedauth/connect/store"
)

// sweepPageSize is how many connections a sweep reads at a time.
const sweepPageSize = 200

// MaxSweepAttempts: a connection whose last refreshes failed this many
// times in a row is skipped by sweeps (a revoked grant is not hammered);
// reads with force_refresh still try, and a success resets the count.
const MaxSweepAttempts = 3

// SweepResult counts what a refresh sweep did.
type SweepResult struct {
	// Checked is how many connections expiring within the window were
	// looked at.
	Checked int
	// Refreshed is how many got new tokens during the sweep: by it, or by
	// a read or another instance's sweep that held the connection's lock
	// first (the provider is called once either way).
	Refreshed int
	// Failed is how many refreshes failed (or are backing off after a
	// failure): each is recorded on its connection as a read's would be.
	Failed int
}

// SweepRefresh refreshes, in every environment, the tokens that expire
// within the given window (OAuth 2 with a refresh token, client
// credentials, app installations) and are due by SweepDue (at most half of
// their lifetime left, and obtained at least one window ago), so that
// connections nobody reads keep working and their refresh tokens stay in
// use, without refreshing short-lived tokens at every pass. It pages through the
// connections by ID; a refresh that fails is recorded on its connection
// (errors entry, auth webhook, backoff) as for a read, and the sweep goes
// on. Refreshes go through the same per-connection lock as reads, so
// several instances may sweep at once: each token is refreshed once.
// It needs the built-in refresher (EnableRefresh); with a RefreshFunc of
// the host's, it calls that for each expiring connection.
func (s *Service) SweepRefresh(ctx context.Context, within time.Duration) (SweepResult, error) {
	var res SweepResult
	if s.refresh == nil {
		return res, nil
	}
	before := s.nowUTC().Add(within)
	var after int64
	for {
		page, err := s.store.ListConnections(ctx, Filter{AfterID: after, ExpiresBefore: &before, Page: store.Page{Limit: sweepPageSize}})
		if err != nil {
			return res, err
		}
		for _, c := range page {
			after = c.ID
			switch c.AuthMode {
			case integrations.AuthModeOAuth2, integrations.AuthModeOAuth2CC, integrations.AuthModeApp:
			case integrations.AuthModeTwoStep, integrations.AuthModeJWT, integrations.AuthModeSignature, integrations.AuthModeBill:
			default:
				continue
			}
			if c.RefreshAttempts >= MaxSweepAttempts {
				continue // left to reads and to reconnection
			}
			res.Checked++
			version := c.Version
			var out *Connection
			if s.refresher != nil {
				out, err = s.refresher.run(ctx, c, false, within)
			} else {
				out, err = s.refresh(ctx, c, false)
			}
			switch {
			case errors.Is(err, ErrRefreshFailed), errors.Is(err, ErrRefreshBackoff):
				res.Failed++
			case errors.Is(err, store.ErrNotFound):
				// Deleted meanwhile.
			case err != nil:
				return res, err
			case out.Version != version:
				res.Refreshed++
			}
		}
		if len(page) < sweepPageSize {
			return res, nil
		}
	}
}
