package functions

import (
	"crypto/sha256"
	"encoding/hex"
)

// HashPayload returns the content hash of a record's JSON payload, as
// RecordWrite.Hash carries it: the hex SHA-256 of the bytes. Callers hash
// the payload in one canonical encoding (encoding/json of the decoded
// value: object keys sorted), so that equal records hash equal.
func HashPayload(payload []byte) string {
	sum := sha256.Sum256(payload)
	var buf [2 * sha256.Size]byte
	hex.Encode(buf[:], sum[:])
	return string(buf[:])
}
