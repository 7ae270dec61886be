// Command genlogos writes integrations/logos.gen.json.gz, the provider
// logos the integrations package embeds and LogoHandler serves. Run it with
//
//	go generate ./integrations
//
// after `npm ci --prefix e2e`: it reads three npm packages pinned in
// e2e/package.json from e2e/node_modules and refuses to run when an
// installed version differs from its pin:
//
//   - @iconify-json/logos (Gil Barbara's SVG Logos, CC0-1.0): colour logos;
//   - simple-icons (CC0-1.0): one-colour brand icons with their brand colour;
//     an icon whose own licence entry is not CC0-1.0 is left out;
//   - @nangohq/providers: Nango's providers.yaml, whose provider keys are
//     matched together with those of the embedded catalogue.
//
// Nango's own logo files are under the Elastic License and are not used.
//
// # Matching
//
// Names are compared in simple-icons' slug form (lower case, "+" "plus",
// "." "dot", "&" "and", accents removed, everything but letters and
// digits dropped). For each provider, three rounds are tried in order,
// and the first that finds an icon wins:
//
//  1. strict: the provider key, its display name, its alias;
//  2. variant: the key with variant suffixes removed (-sandbox, -oauth,
//     -api-key, -mcp, -basic, -cc, -scim, -pat, ... see variantSuffixes),
//     the display name without its parenthesis and trailing variant words;
//  3. family: the first segment of the key ("google" of google-calendar),
//     when the display name starts with that same word ("Google
//     Calendar"), so that a family of products shares its brand's mark.
//
// In each round SVG Logos is asked first (its square "-icon" mark when it
// has one), then simple-icons; a wide SVG Logos wordmark (more than 1.5
// times wider than high, unreadable in a small square) is used only when
// simple-icons has nothing in that round.
//
// # Output
//
// Every SVG goes through the allow-list sanitiser (package svgsafe); an
// icon from which it would drop anything is not used. The output is gzip of
// one JSON document: the sources with their versions and licences, the
// distinct icons by "set:name", and each provider's icon with the round
// that matched it. The same packages always give the same bytes (sorted
// keys, no timestamps); a test regenerates the file and compares.
package main
