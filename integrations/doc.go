// Package integrations holds integrations (a provider configured in one
// environment: one OAuth app, one API-key setup) and the provider catalogue
// they are built on.
//
// # Providers
//
// A [Provider] describes one external API as data: its auth mode (one of
// the AuthMode constants, every mode of Nango's providers.yaml), the URLs of its authorization flow and their quirks (extra
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
// "providers" list, each entry strictly checked) or Nango's providers.yaml
// (a mapping of provider keys to entries; [LoadNangoYAML]), detecting which
// one they are given. Every key of Nango's file is read: the common ones
// into [Provider], the others into [AuthDetails]. Only a document that
// cannot be read at all is an error: an entry that cannot be read (a value
// of the wrong type, an unknown field of our format, an alias cycle) comes
// back as a provider carrying its problem, which [Provider.Validate]
// reports.
//
// [BuildCatalog] then decides what a problem does. With
// [BuildOptions].Strict (what [NewCatalog] and [Catalog.With] do) any
// problem fails the build, every problem listed: use it to check your own
// file in CI. Without it one bad provider never takes the others down: it
// is kept as unusable. [Catalog.List], [Catalog.Search] and
// [Catalog.Lookup] return it, [Catalog.Unusable] says why (an
// [UnusableError]), [Catalog.Problems] lists every problem, and
// [Catalog.Get] does not return it, so code that acts on providers never
// sees bad data. The HTTP API serves it with its reason and refuses, with
// code [CodeProviderUnusable], integrations and connections for it:
//
//	ps, err := integrations.LoadFile("providers.yaml")
//	if err != nil {
//		return err // unreadable document
//	}
//	catalog, err := integrations.BuildCatalog(defaultCatalog, integrations.BuildOptions{}, ps...)
//	if err != nil {
//		return err // only with Strict
//	}
//	for _, u := range catalog.Problems() {
//		log.Printf("provider %s unusable: %s", u.Provider, u.Reason())
//	}
package integrations
