package proxy

import (
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/embedauth/connect/connections"
)

// Prime computes, once, what calls to t inject and the provider's base URL
// they go to, and returns a Target that carries them with a lean copy of
// the connection: its identity, auth mode and credentials, without its
// connection config, metadata, tags, errors, sealed form, scopes or raw
// token response, which calls no longer read. When either cannot be
// computed, Prime returns t as it is: its calls report the error.
//
// A cache that keeps many Targets (the Service's keeps up to 100,000)
// stores the primed one. It costs the garbage collector a few objects
// instead of dozens: the Target, the copies of the connection and
// credentials, the injection and the base URL share one allocation, and
// their strings one more (BenchmarkPrimeHeap measures both forms).
// Nothing may modify a primed Target or what it points to.
func (p *Proxy) Prime(t *Target) *Target {
	if t == nil || t.Connection == nil || t.Provider == nil {
		return t
	}
	inj := t.injection.Load()
	if inj == nil {
		var err error
		if inj, err = p.inject(t); err != nil {
			return t
		}
	}
	u, err := (&call{p: p, t: t}).computeBaseURL()
	if err != nil {
		return t
	}

	b := new(primed)
	var s stringPack
	b.conn = *t.Connection
	c := &b.conn
	c.ConnectionConfig, c.Metadata, c.Tags, c.Errors, c.SealedCredentials = nil, nil, nil, nil, ""
	s.add(&c.IntegrationKey, &c.ConnectionID, &c.Provider, &c.WebhookURLOverride, &c.AuthMode)
	c.CredentialsExpiresAt = b.time(0, c.CredentialsExpiresAt)
	c.LastFetchedAt = b.time(1, c.LastFetchedAt)
	c.LastRefreshFailure = b.time(2, c.LastRefreshFailure)
	if t.Connection.Credentials != nil {
		b.cr = *t.Connection.Credentials
		cr := &b.cr
		cr.Raw, cr.Scopes = nil, nil
		cr.ExpiresAt = b.time(3, cr.ExpiresAt)
		cr.ObtainedAt = b.time(4, cr.ObtainedAt)
		s.add(&cr.Type, &cr.AccessToken, &cr.RefreshToken, &cr.OAuthToken, &cr.OAuthTokenSecret, &cr.Token,
			&cr.ClientID, &cr.ClientSecret, &cr.APIKey, &cr.Username, &cr.Password, &cr.JWTToken,
			&cr.TokenID, &cr.TokenSecret)
		if cr.ConfigOverride != nil {
			b.override = *cr.ConfigOverride
			cr.ConfigOverride = &b.override
			s.add(&b.override.ClientID, &b.override.ClientSecret)
		}
		c.Credentials = cr
	}
	b.t.Connection, b.t.Provider = c, t.Provider
	b.t.ClientID, b.t.ClientSecret, b.t.PrivateKey = t.ClientID, t.ClientSecret, t.PrivateKey
	s.add(&b.t.ClientID, &b.t.ClientSecret, &b.t.PrivateKey)

	b.inj.signer = inj.signer
	if len(inj.header) > 0 {
		b.inj.header = make([]headerField, len(inj.header))
		values := make([]string, 0, len(inj.header))
		for i, f := range inj.header {
			start := len(values)
			values = append(values, f.values...)
			b.inj.header[i] = headerField{name: f.name, values: values[start:len(values):len(values)]}
			s.add(&b.inj.header[i].name)
			for k := range b.inj.header[i].values {
				s.add(&b.inj.header[i].values[k])
			}
		}
	}
	if len(inj.query) > 0 {
		b.inj.query = slices.Clone(inj.query)
		for i := range b.inj.query {
			s.add(&b.inj.query[i][0], &b.inj.query[i][1])
		}
	}
	if len(inj.secrets) > 0 {
		b.inj.secrets = slices.Clone(inj.secrets)
		for i := range b.inj.secrets {
			s.add(&b.inj.secrets[i])
		}
	}

	b.u = *u
	s.add(&b.u.Scheme, &b.u.Opaque, &b.u.Host, &b.u.Path, &b.u.RawPath, &b.u.RawQuery, &b.u.Fragment, &b.u.RawFragment)
	s.pack()
	b.base = baseResult{u: &b.u}
	b.t.injection.Store(&b.inj)
	b.t.base.Store(&b.base)
	return &b.t
}

// primed is a primed Target and what it points to, in one allocation.
type primed struct {
	t        Target
	conn     connections.Connection
	cr       connections.Credentials
	override connections.ConfigOverride
	times    [5]time.Time
	inj      injection
	base     baseResult
	u        url.URL
}

// time copies *v into the block's times[i] and returns a pointer to the
// copy (nil for nil).
func (b *primed) time(i int, v *time.Time) *time.Time {
	if v == nil {
		return nil
	}
	b.times[i] = *v
	return &b.times[i]
}

// stringPack moves strings into one allocation: add collects the fields,
// pack copies their values (each distinct value once) into one string and
// points each field at its part.
type stringPack struct {
	fields []*string
}

func (sp *stringPack) add(fields ...*string) {
	for _, f := range fields {
		if *f != "" {
			sp.fields = append(sp.fields, f)
		}
	}
}

func (sp *stringPack) pack() {
	at := make(map[string]int, len(sp.fields))
	n := 0
	for _, f := range sp.fields {
		if _, ok := at[*f]; !ok {
			at[*f] = n
			n += len(*f)
		}
	}
	var b strings.Builder
	b.Grow(n)
	for _, f := range sp.fields {
		// Offsets were given in this order: a value is new here when its
		// offset is the end of what is written so far.
		if at[*f] == b.Len() {
			b.WriteString(*f)
		}
	}
	all := b.String()
	for _, f := range sp.fields {
		off := at[*f]
		*f = all[off : off+len(*f)]
	}
}
