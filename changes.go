package connect

import (
	"context"
	"errors"
	"time"

	"github.com/embedauth/connect/internal/cache"
	"github.com/embedauth/connect/proxy"
	"github.com/embedauth/connect/store"
)

const (
	// changeFeedLimit is the most changes one poll of the change feed
	// reads: a poll that finds more (a bulk update through another
	// instance) drops the whole proxy cache and starts again from now.
	changeFeedLimit = 10000
	// changeRetention is how long the change feed keeps a change: the
	// maintenance sweep prunes older ones. An instance that could not read
	// the feed for longer than its ProxyCacheTTL has fallen back to it, so
	// it needs no change older than that.
	changeRetention = time.Hour
)

// changeWatcher follows a Store's change feed for the proxy's cache: it
// drops the cached copies of the connections that any instance changed, and
// lets the cache keep values for the long TTL only while it keeps up.
type changeWatcher struct {
	feed        store.ChangeFeed
	cache       *cache.Cache[proxyKey, proxy.Packed]
	short, long time.Duration
	now         func() time.Time

	following bool               // cur is valid
	cur       store.ChangeCursor // where the next poll starts
	lastOK    time.Time          // when the last successful poll started
	onLong    bool               // the cache runs on the long TTL
}

// poll reads the feed once and applies what it lists.
func (w *changeWatcher) poll(ctx context.Context) error {
	start := w.now()
	if !w.following {
		if err := w.restart(ctx); err != nil {
			return err
		}
	} else {
		changes, next, err := w.feed.ConnectionChanges(ctx, w.cur, changeFeedLimit)
		switch {
		case errors.Is(err, store.ErrTooManyChanges):
			if err := w.restart(ctx); err != nil {
				return err
			}
		case err != nil:
			return err
		default:
			w.apply(changes)
			w.cur = next
		}
	}
	w.lastOK = start
	if !w.onLong {
		w.cache.SetTTL(w.long)
		w.onLong = true
	}
	return nil
}

// restart takes a cursor at now and drops every cached value: one read
// before the cursor may predate a change the feed will not list.
func (w *changeWatcher) restart(ctx context.Context) error {
	cur, err := w.feed.ChangeCursor(ctx)
	if err != nil {
		return err
	}
	w.cache.DeleteFunc(func(proxyKey, proxy.Packed) bool { return true })
	w.cur, w.following = cur, true
	return nil
}

func (w *changeWatcher) apply(changes []store.ConnectionChange) {
	for _, c := range changes {
		if c.ConnectionID != "" {
			w.cache.Delete(proxyKey{c.EnvironmentID, c.IntegrationKey, c.ConnectionID})
			continue
		}
		w.cache.DeleteFunc(func(k proxyKey, _ proxy.Packed) bool {
			return k.env == c.EnvironmentID && k.key == c.IntegrationKey
		})
	}
}

// failed handles a failed poll: once the feed has not been read for the
// short TTL, the cache falls back to it (values older than that become
// unusable at once). It reports whether it fell back now.
func (w *changeWatcher) failed() bool {
	if !w.onLong || w.now().Sub(w.lastOK) < w.short {
		return false
	}
	w.cache.SetTTL(w.short)
	w.onLong = false
	return true
}

// stop puts the cache back on the short TTL.
func (w *changeWatcher) stop() {
	w.cache.SetTTL(w.short)
	w.onLong, w.following = false, false
}

// newChangeWatcher returns the watcher of the Store's change feed, or nil when
// the Store has none or the cache does not use it.
func (s *Service) newChangeWatcher() *changeWatcher {
	feed, ok := s.store.(store.ChangeFeed)
	short := s.proxyCache.TTL()
	if !ok || short <= 0 || s.cfg.ProxyCacheMaxAge <= short {
		return nil
	}
	return &changeWatcher{feed: feed, cache: s.proxyCache, short: short, long: s.cfg.ProxyCacheMaxAge, now: s.cfg.Now}
}

// watchChanges polls the change feed every ChangePollInterval until ctx
// ends, then puts the cache back on its short TTL.
func (s *Service) watchChanges(ctx context.Context, w *changeWatcher, done chan struct{}) {
	defer close(done)
	defer w.stop()
	t := time.NewTicker(s.cfg.ChangePollInterval)
	defer t.Stop()
	failing := false
	for {
		switch err := w.poll(ctx); {
		case err == nil && failing:
			failing = false
			s.logger.InfoContext(ctx, "proxy cache: following the change feed again", "max_age", w.long)
		case err != nil && ctx.Err() == nil:
			if !failing {
				s.logger.WarnContext(ctx, "proxy cache: cannot read the change feed", "err", err)
			}
			if w.failed() {
				s.logger.WarnContext(ctx, "proxy cache: connections are cached for ProxyCacheTTL until the change feed answers", "ttl", w.short)
			}
			failing = true
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}
