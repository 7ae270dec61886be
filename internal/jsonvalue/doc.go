// Package jsonvalue copies decoded JSON values (the maps, slices and
// scalars encoding/json produces into an any), so that a copy can be
// changed without changing what it was copied from, and writes them
// without reflection ([Append]), byte for byte as json.Marshal does.
package jsonvalue
