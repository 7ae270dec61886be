package proxy

import (
	"context"
	"io"
	"net/http"
)

// Transport returns an http.RoundTripper bound to one connection, for Go
// code that hands an *http.Client to a provider's own SDK: every request
// to the connection's base URL (the provider's, or opts.BaseURLOverride)
// carries the connection's current credentials, refreshed when they are
// about to expire and once more after a 401; requests to other hosts go
// out without them. Retries, the address policy and the size limits apply
// as for the proxy route; redirects are left to the http.Client using the
// transport.
func (p *Proxy) Transport(environmentID int64, integrationKey, connectionID string, opts Options) http.RoundTripper {
	return &connTransport{p: p, env: environmentID, key: integrationKey, id: connectionID, opts: opts}
}

// Client returns an *http.Client whose Transport is p.Transport(...).
func (p *Proxy) Client(environmentID int64, integrationKey, connectionID string, opts Options) *http.Client {
	return &http.Client{Transport: p.Transport(environmentID, integrationKey, connectionID, opts)}
}

type connTransport struct {
	p       *Proxy
	env     int64
	key, id string
	opts    Options
}

func (t *connTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	closeBody := func() {
		if req.Body != nil {
			req.Body.Close()
		}
	}
	if req.URL == nil || (req.URL.Scheme != "http" && req.URL.Scheme != "https") || req.URL.Host == "" {
		closeBody()
		return nil, errNotHTTPURL
	}
	ctx := req.Context()
	tg, err := t.p.cfg.Source.Target(ctx, t.env, t.key, t.id, false)
	if err != nil {
		closeBody()
		return nil, err
	}
	c := &call{p: t.p, env: t.env, key: t.key, id: t.id, opts: t.opts, noFollow: true}
	if err := c.setTarget(tg); err != nil {
		closeBody()
		return nil, err
	}
	if c.origin, err = c.baseURL(); err != nil {
		closeBody()
		return nil, err
	}
	if err := t.p.cfg.Policy.CheckHost(req.URL.Hostname()); err != nil {
		closeBody()
		return nil, err
	}
	out := req.Clone(context.WithValue(ctx, callKey{}, c))
	switch {
	case req.Body == nil || req.Body == http.NoBody:
		c.getBody = func() (io.ReadCloser, error) { return http.NoBody, nil }
	case req.GetBody != nil:
		c.getBody = req.GetBody
	}
	resp, err := c.do(out)
	if err != nil {
		return nil, err
	}
	if err := c.finish(resp); err != nil {
		resp.Body.Close()
		return nil, err
	}
	return resp, nil
}
