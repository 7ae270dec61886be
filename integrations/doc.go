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
// data. URL templates are built with [Provider.RenderURL] instead of being
// evaluated directly: it checks every value at the position it takes (a
// host label, the whole origin, the port, a path segment, the query) so
// that no value moves the request to another host: [Provider.CheckURLValues]
// runs the same checks on connection config before it is stored, and
// [Provider.SecretHostKeys] names the keys that decide the host of a URL
// carrying the integration's secrets. [FieldSpec.CheckValue] checks an end
// user's value against its field.
//
// # Templates
//
// [ParseTemplate] parses a template into a [Template] (an expression tree,
// parsed once; [Interpolate] and [Placeholders] are shortcuts over a cache
// of parsed templates) and [Template.Eval] computes it from
// [TemplateVars]. The language is the one of Nango's providers.yaml:
//
//   - Literal text, and ${...} expressions. "A || B" at the top level lists
//     alternatives (spaces around them are trimmed): the first whose values
//     are all present wins. ${a || b} picks the first of two expressions.
//   - Variables: ${connectionConfig.KEY}, ${credentials.KEY},
//     ${credentials.raw.PATH} (a dotted path into the raw token response),
//     the bare names ${apiKey}, ${accessToken}, ${clientId},
//     ${clientSecret}, ${token}, ${refresh_token}, ${apiSubdomain},
//     ${stepN.PATH} and ${assertionOption.PATH} (from TemplateVars.Extra).
//     A variable without a value, or with an empty one, fails its
//     alternative; when every alternative fails, Eval returns a
//     [MissingValueError] naming the variables.
//   - The request's values: ${method}, ${host} (with its port), ${path}
//     (escaped), ${endpoint} (as the caller gave it, without query),
//     ${params} (Duo's canonical parameters: the form or JSON body of a
//     POST, PUT or PATCH, else the query, sorted and RFC 3986 encoded),
//     ${urlCanonicalParams} (the query, so), ${bodyCanonicalParams} (the
//     raw body) and ${contentType}.
//   - ${now} (ISO 8601 with milliseconds, UTC), ${now:FORMAT} with dayjs's
//     tokens (YYYY, MM, DD, HH, mm, ss, SSS, ddd, MMM, ZZ, X for Unix
//     seconds, x for milliseconds, [text] for literal text...) and
//     ${now+N:UNIT[:FORMAT]} or ${now-N:...} (UNIT: seconds, minutes,
//     hours, days, weeks, months, years); ${random}, a random UUID.
//   - Functions, nested to any depth; each argument is itself a template
//     (text and ${...}), arguments are separated by the commas outside
//     parentheses and ${...} and trimmed: base64(s), sha256Hex(s),
//     sha256Base64(s), hmacSha1Hex(message, key), ed25519Sign(message,
//     key) (an Ed25519 PKCS #8 PEM key; the signature in base64),
//     fingerprint(key) ("SHA256:" and the base64 digest of a private key's
//     public key, as Snowflake names it) and awsSigV4(accessKey, secretKey,
//     region, service[, host]) (the Authorization header of AWS Signature
//     Version 4 for the request, signed by AWS's own signer; with
//     x-amz-date: ${now:YYYYMMDDTHHmmss[Z]} on the request).
//
// A template that reads the request, the clock or ${random} is
// [Template.PerRequest]: the proxy computes it for each request (each
// retry and redirect hop), and the credential check and token requests for
// each of theirs; [TemplateVars.Stable] gives the templates of one request
// the same ${now} and ${random}. The others may be computed once per
// connection. Parse errors are [TemplateError] values with the byte
// offset; a function that fails (a key that is not one) is a
// [FunctionError]. Errors name variables and functions, never values.
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
// # Logos
//
// [Service.LogoHandler] serves GET /providers/{provider}/logo.svg: the
// provider's logo when this package embeds one ([HasLogo]; SVGs from two
// CC0 icon sets, matched to provider keys and run through an allow-list
// sanitiser by the generator in internal/genlogos, go generate), else a
// monogram. [Service.LogoURL] is the address of a provider's logo in the
// wire forms; [Service.SetLogoBaseURL] points both at a host's own files.
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
