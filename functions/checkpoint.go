package functions

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/embedauth/connect/internal/httpapi"
	"github.com/embedauth/connect/store"
)

// Checkpoint is a function's resumable state for one connection (Nango's
// getCheckpoint/saveCheckpoint): a flat JSON object whose values are
// strings, numbers or booleans. Validate states the limits.
type Checkpoint map[string]any

// The limits of a Checkpoint.
const (
	// MaxCheckpointKeys is how many keys a checkpoint may hold. Nango
	// sets no number; a checkpoint is a handful of cursors and dates, and
	// a bound keeps a runaway loop from filling it.
	MaxCheckpointKeys = 100
	// MaxCheckpointKeyLen is the most characters of a key.
	MaxCheckpointKeyLen = 255
	// MaxCheckpointSize is the most bytes of a checkpoint encoded as
	// JSON (by encoding/json): 64 KiB.
	MaxCheckpointSize = 64 << 10
)

// CodeInvalidCheckpoint is the code of the errors of Checkpoint.Validate
// and DecodeCheckpoint.
const CodeInvalidCheckpoint = "invalid_checkpoint"

// maxSafeInteger is the largest integer a float64 holds exactly (2^53),
// as JavaScript's Number.MAX_SAFE_INTEGER + 1.
const maxSafeInteger = 1 << 53

// Validate checks that c can be stored and read back unchanged, and
// returns an ErrInvalid *store.Error with code invalid_checkpoint naming
// the first offending key (in sorted order) otherwise:
//
//   - at most MaxCheckpointKeys keys, each of 1 to MaxCheckpointKeyLen
//     characters;
//   - values that are strings, booleans or numbers only: Go's integer and
//     floating-point types (named ones too) and json.Number; no nil, no
//     object, no array (a checkpoint is flat);
//   - numbers that are finite, and integers no larger in magnitude than
//     2^53, since a checkpoint is read back with float64 numbers (store a
//     larger one, such as a time in nanoseconds, as a string);
//   - keys and strings that are valid UTF-8 without the character U+0000
//     (which Postgres cannot store);
//   - at most MaxCheckpointSize bytes once encoded as JSON.
//
// A nil or empty Checkpoint is valid.
func (c Checkpoint) Validate() error {
	if len(c) > MaxCheckpointKeys {
		return invalidCheckpoint("the checkpoint has %d keys, more than the maximum of %d", len(c), MaxCheckpointKeys)
	}
	keys := make([]string, 0, len(c))
	for k := range c {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		switch n := utf8.RuneCountInString(k); {
		case k == "":
			return invalidCheckpoint("a key of the checkpoint is empty")
		case n > MaxCheckpointKeyLen:
			return invalidCheckpoint("the key %.40q... of the checkpoint has %d characters, more than the maximum of %d",
				k, n, MaxCheckpointKeyLen)
		case !utf8.ValidString(k) || strings.ContainsRune(k, 0):
			return invalidCheckpoint("the key %q of the checkpoint is not valid UTF-8 or holds the character U+0000", k)
		}
		if err := checkCheckpointValue(c[k]); err != nil {
			return invalidCheckpoint("the value of %q in the checkpoint %s", k, err)
		}
	}
	b, err := json.Marshal(c)
	if err != nil {
		return invalidCheckpoint("the checkpoint cannot be encoded as JSON: %v", err)
	}
	if len(b) > MaxCheckpointSize {
		return invalidCheckpoint("the checkpoint is %d bytes of JSON, more than the maximum of %d", len(b), MaxCheckpointSize)
	}
	return nil
}

// Encode validates c and returns its JSON encoding: an object ("{}" for a
// nil Checkpoint).
func (c Checkpoint) Encode() (json.RawMessage, error) {
	if err := c.Validate(); err != nil {
		return nil, err
	}
	if c == nil {
		return json.RawMessage(`{}`), nil
	}
	return json.Marshal(c)
}

// checkCheckpointValue says what is wrong with a checkpoint's value, or
// returns nil.
func checkCheckpointValue(v any) error {
	if n, ok := v.(json.Number); ok {
		s := string(n)
		_, err := strconv.ParseFloat(s, 64)
		if s == "" || (s[0] != '-' && !frequencyDigit(s[0])) || !json.Valid([]byte(s)) || err != nil {
			return fmt.Errorf("is %.40q, not a finite JSON number", s)
		}
		if i, err := strconv.ParseInt(s, 10, 64); !strings.ContainsAny(s, ".eE") && (err != nil || i > maxSafeInteger || i < -maxSafeInteger) {
			return fmt.Errorf("is %s, an integer beyond 2^53 that a float64 cannot hold exactly (store it as a string)", n)
		}
		return nil
	}
	if v == nil {
		return errors.New("is null (want a string, number or boolean)")
	}
	rv := reflect.ValueOf(v)
	switch rv.Kind() {
	case reflect.String:
		if s := rv.String(); !utf8.ValidString(s) || strings.ContainsRune(s, 0) {
			return errors.New("is not valid UTF-8 or holds the character U+0000")
		}
	case reflect.Bool:
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		if i := rv.Int(); i > maxSafeInteger || i < -maxSafeInteger {
			return fmt.Errorf("is %d, an integer beyond 2^53 that a float64 cannot hold exactly (store it as a string)", i)
		}
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr:
		if u := rv.Uint(); u > maxSafeInteger {
			return fmt.Errorf("is %d, an integer beyond 2^53 that a float64 cannot hold exactly (store it as a string)", u)
		}
	case reflect.Float32, reflect.Float64:
		if f := rv.Float(); math.IsNaN(f) || math.IsInf(f, 0) {
			return fmt.Errorf("is %v, not a finite number", f)
		}
	case reflect.Map, reflect.Struct:
		return fmt.Errorf("is an object (a %T): a checkpoint is flat, its values are strings, numbers or booleans", v)
	case reflect.Slice, reflect.Array:
		return fmt.Errorf("is an array (a %T): a checkpoint is flat, its values are strings, numbers or booleans", v)
	default:
		return fmt.Errorf("is a %T (want a string, number or boolean)", v)
	}
	return nil
}

// maxCheckpointInput bounds what DecodeCheckpoint reads: a checkpoint
// within MaxCheckpointSize, with room for whitespace and escapes.
const maxCheckpointInput = 4 * MaxCheckpointSize

// DecodeCheckpoint reads a checkpoint from JSON: an object, its numbers
// read as float64. It is strict, and refuses with an ErrInvalid
// *store.Error of code invalid_checkpoint: input that is not a JSON
// object (null included) or has data after it; a key given twice; bytes
// that are not UTF-8, lone UTF-16 surrogate escapes and U+0000 (see
// httpapi.CheckJSON); more than 256 KiB of input; and whatever
// Checkpoint.Validate refuses, nested values first of all.
func DecodeCheckpoint(b []byte) (Checkpoint, error) {
	if len(b) > maxCheckpointInput {
		return nil, invalidCheckpoint("the checkpoint is %d bytes, more than the maximum of %d", len(b), maxCheckpointInput)
	}
	if t := bytes.TrimLeft(b, " \t\r\n"); len(t) == 0 || t[0] != '{' {
		return nil, invalidCheckpoint("the checkpoint is not a JSON object")
	}
	if err := httpapi.CheckJSON(b); err != nil {
		return nil, invalidCheckpoint("the checkpoint is refused: %s", describeInvalid(err))
	}
	var c Checkpoint
	if err := json.Unmarshal(b, &c); err != nil {
		return nil, invalidCheckpoint("the checkpoint is not valid JSON: %v", err)
	}
	if c == nil {
		c = Checkpoint{}
	}
	if err := c.Validate(); err != nil {
		return nil, err
	}
	return c, nil
}

func invalidCheckpoint(format string, args ...any) error {
	return store.Errorf(store.ErrInvalid, CodeInvalidCheckpoint, format, args...)
}

// describeInvalid returns what an httpapi.CheckJSON error says, without
// its mention of a request body: the field and the problem.
func describeInvalid(err error) string {
	var e *store.Error
	if !errors.As(err, &e) {
		return err.Error()
	}
	if len(e.Errors) == 0 {
		return strings.TrimSuffix(strings.Replace(e.Message, "The request body", "it", 1), ".")
	}
	f := e.Errors[0]
	if len(f.Path) == 0 {
		return f.Message
	}
	return fmt.Sprintf("%q %s", strings.Join(f.Path, "."), f.Message)
}
