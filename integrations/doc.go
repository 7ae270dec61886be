// Package integrations holds integrations (a provider configured in one
// environment: one OAuth app, one API-key setup) and the provider catalogue
// they are built on.
//
// # Providers
//
// A [Provider] describes one external API as data: its auth mode (OAUTH2,
// OAUTH1, OAUTH2_CC, API_KEY, BASIC, APP, NONE; TBA, JWT and TWO_STEP as
// data), the URLs of its authorization flow and their quirks (extra
// parameters, scope separator, PKCE, token endpoint authentication), how the
// proxy reaches it (base URL, injected headers and query parameters,
// rate-limit headers, a cheap request that verifies new credentials), the
// inputs an end user supplies to connect (connection_config and credentials
// schemas a Connect UI renders as a form), and how its incoming webhooks are
// signed and routed to a connection. Every field is documented on the type;
// the same struct is read from YAML and written as JSON.
//
// Strings that vary per connection are templates, kept as written in the
// data: ${connectionConfig.subdomain}, ${credentials.username}, ${apiKey},
// ${accessToken}, ${clientId}, with "A || B" meaning "B when A cannot be
// resolved". [Interpolate] resolves them for one connection. URL templates
// are built with [Provider.RenderURL] instead, which checks every value at
// the position it takes (a host label, the whole origin, a path segment,
// the query) so that no value moves the request to another host:
// [Provider.CheckURLValues] runs the same checks on connection config
// before it is stored, and [Provider.SecretHostKeys] names the keys that
// decide the host of a URL carrying the integration's secrets.
// [FieldSpec.CheckValue] checks an end user's value against its field.
//
// # The catalogue
//
// A [Catalog] is an immutable, ordered set of providers, safe for
// concurrent use. [DefaultCatalog] builds one from the data embedded in this
// package (more than 200 providers in providers/*.yaml, most used first);
// [NewCatalog] builds one from any providers, and [Catalog.With] adds or
// replaces providers. Building a catalogue resolves aliases (a provider with
// alias: other inherits every field of other, then overrides some), fills
// in documented defaults and validates every provider, reporting each
// problem as a [ValidationError] that names the provider and the field.
//
// The wire form served by GET /providers and GET /providers/{provider} is
// [Provider.API].
//
// # Loading provider files
//
// [Load] and [LoadFile] read either our format (a document with a
// "providers" list, strictly checked) or Nango's providers.yaml (a mapping
// of provider keys to entries; [LoadNangoYAML]), detecting which one they
// are given. Nango's file has modes and fields this package does not model:
// unknown fields are ignored and entries keep their auth mode, so pick out
// the valid ones before building a catalogue:
//
//	ps, err := integrations.LoadFile("providers.yaml")
//	if err != nil {
//		return err
//	}
//	var valid []*integrations.Provider
//	for _, p := range ps {
//		if p.Validate() == nil {
//			valid = append(valid, p)
//		}
//	}
//	catalog, err := defaultCatalog.With(valid...)
package integrations
