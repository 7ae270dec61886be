package functions

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/embedauth/connect/internal/secret"
)

// slowRecordID is recordID as it was before topLevelID: the record
// decoded by encoding/json. recordID must answer the same for every JSON
// object.
func slowRecordID(b []byte) (string, error) {
	var probe struct {
		ID json.RawMessage `json:"id"`
	}
	if err := json.Unmarshal(b, &probe); err != nil {
		return "", err
	}
	raw := bytes.TrimSpace(probe.ID)
	if len(raw) == 0 || string(raw) == "null" {
		return "", errors.New("the record has no id")
	}
	var id string
	switch raw[0] {
	case '"':
		if err := json.Unmarshal(raw, &id); err != nil {
			return "", err
		}
		id = strings.ReplaceAll(id, "\x00", "")
	case '-', '0', '1', '2', '3', '4', '5', '6', '7', '8', '9':
		if _, err := strconv.ParseFloat(string(raw), 64); err != nil {
			return "", fmt.Errorf("the id %s is not a number", raw)
		}
		id = string(raw)
	default:
		return "", errors.New("the id must be a string or a number")
	}
	if id == "" {
		return "", errors.New("the id is empty")
	}
	if utf8.RuneCountInString(id) > MaxRecordIDLen {
		return "", fmt.Errorf("the id is longer than %d characters", MaxRecordIDLen)
	}
	return id, nil
}

var recordIDCases = []string{
	`{"id":"a"}`,
	`{"id":12}`,
	`{"id":-1.5e3}`,
	`{"id":1e400}`,
	`{"id":""}`,
	`{"id":null}`,
	`{"id":true}`,
	`{"id":{"x":1}}`,
	`{"id":["a"]}`,
	`{}`,
	` { } `,
	`{"title":"x"}`,
	`{"ID":"upper"}`,
	`{"Id":"mixed","iD":"last"}`,
	`{"id":"first","id":"second"}`,
	`{"id":"a","ID":"b"}`,
	`{"\u0069d":"escaped key"}`,
	`{"ıd":"dotless i"}`,
	`{"id":"caf\u00e9"}`,
	`{"id":"café"}`,
	`{"id":"a\"b"}`,
	`{"id":"a\\b"}`,
	`{"id":"nul\u0000byte"}`,
	`{"id":"\u0000"}`,
	`{"id":"\ud800"}`,
	"{\"id\":\"bad\xffutf8\"}",
	`{ "id" : "spaced" , "x" : [1, {"id": "nested"}, "]}"] }`,
	`{"x":{"id":"nested only"}}`,
	`{"x":"{\"id\":\"in a string\"}","id":"outer"}`,
	`{"x":"\\","id":"after backslash"}`,
	`{"id":"` + strings.Repeat("x", MaxRecordIDLen) + `"}`,
	`{"id":"` + strings.Repeat("x", MaxRecordIDLen+1) + `"}`,
	`{"id":"` + strings.Repeat("é", MaxRecordIDLen) + `"}`,
	`{"id":` + strings.Repeat("9", 300) + `}`,
	"{\n\t\"id\"\r\n:\t\"ws\"\n}",
	`{"a":1,"b":false,"c":null,"d":[],"e":{},"id":7}`,
}

// TestRecordIDMatchesDecoding checks that recordID finds the id that
// decoding the record finds, and refuses what it refuses.
func TestRecordIDMatchesDecoding(t *testing.T) {
	for _, c := range recordIDCases {
		checkRecordID(t, []byte(c))
	}
}

func checkRecordID(t *testing.T, b []byte) {
	t.Helper()
	if !json.Valid(b) {
		return // encodeRecord never returns it
	}
	id, err := recordID(b)
	want, wantErr := slowRecordID(b)
	if id != want || (err == nil) != (wantErr == nil) || (err != nil && err.Error() != wantErr.Error()) {
		t.Errorf("recordID(%s) = %q, %v; decoding gives %q, %v", b, id, err, want, wantErr)
	}
}

func FuzzRecordID(f *testing.F) {
	for _, c := range recordIDCases {
		f.Add([]byte(c))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		checkRecordID(t, b)
	})
}

// panicky is a record whose encoding panics.
type panicky struct{ ID string }

func (p panicky) MarshalJSON() ([]byte, error) {
	if p.ID == "boom" {
		panic("boom at encoding")
	}
	return json.Marshal(map[string]string{"id": p.ID})
}

// TestEncodeRecordsInParallel checks that a batch encoded on several
// goroutines gives what one goroutine gives: the records in order, the
// first of two with the same id kept, the first record refused named, and
// a panic of a record's encoding raised in the caller (as a PanicError
// with the record's stack once protect recovers it).
func TestEncodeRecordsInParallel(t *testing.T) {
	recs := make([]map[string]any, MaxRecordsPerBatch)
	for i := range recs {
		recs[i] = map[string]any{"id": strconv.Itoa(i % 900), "n": i}
	}
	out, dropped, err := encodeRecords(recs)
	if err != nil || dropped != 100 || len(out) != 900 {
		t.Fatalf("encodeRecords = %d records, %d dropped, %v; want 900, 100, nil", len(out), dropped, err)
	}
	for i, r := range out {
		if want := fmt.Sprintf(`{"id":"%d","n":%d}`, i, i); r.id != strconv.Itoa(i) || string(r.payload) != want {
			t.Fatalf("record %d = %q %s, want %s", i, r.id, r.payload, want)
		}
	}

	recs[300] = map[string]any{"title": "no id"}
	recs[900] = map[string]any{"id": ""}
	if _, _, err := encodeRecords(recs); err == nil || !strings.Contains(err.Error(), "record 300: the record has no id") {
		t.Fatalf("encodeRecords with records 300 and 900 refused = %v, want record 300's error", err)
	}

	ps := make([]panicky, MaxRecordsPerBatch)
	for i := range ps {
		ps[i].ID = strconv.Itoa(i)
	}
	ps[700].ID = "boom"
	err = protect(func() error {
		_, _, err := encodeRecords(ps)
		return err
	})
	var pe *PanicError
	if !errors.As(err, &pe) || pe.Value != "boom at encoding" {
		t.Fatalf("encodeRecords with a panicking record = %v, want a PanicError of its value", err)
	}
	if !strings.Contains(strings.Join(pe.Stack, "\n"), "panicky.MarshalJSON") {
		t.Errorf("the panic's stack does not name the record's MarshalJSON:\n%s", strings.Join(pe.Stack, "\n"))
	}
}

// TestAppendMetadataMatchesJSON checks that the _nango_metadata GET
// /records writes is what json.Marshal of its recordMetadata gives.
func TestAppendMetadataMatchesJSON(t *testing.T) {
	at := func(s string) time.Time {
		v, err := time.Parse(time.RFC3339Nano, s)
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
	ptr := func(v time.Time) *time.Time { return &v }
	first := at("2025-03-04T05:06:07.123456Z")
	recs := []*Record{
		{ID: "a", FirstSeenAt: first, UpdatedAt: first, Seq: 1},
		{ID: "b", FirstSeenAt: first, UpdatedAt: at("2025-03-04T05:06:08Z"), Seq: 1 << 40},
		{ID: "c", FirstSeenAt: first, UpdatedAt: at("2025-03-04T05:06:09.1Z"), DeletedAt: ptr(at("2025-03-04T05:06:09.1Z")), Seq: 7},
		{ID: "d", FirstSeenAt: first, UpdatedAt: first, PrunedAt: ptr(at("2026-01-01T00:00:00Z")), Seq: 8},
		{ID: "e", FirstSeenAt: first.In(time.FixedZone("x", 5*3600+30*60)), UpdatedAt: first.In(time.FixedZone("y", -3600)), Seq: 9},
		{ID: "f", FirstSeenAt: time.Time{}, UpdatedAt: time.Time{}},
		{ID: "g", FirstSeenAt: first, UpdatedAt: at("9999-12-31T23:59:59.999999999Z"), Seq: 10},
	}
	for _, r := range recs {
		want, err := json.Marshal(recordMetadata{FirstSeenAt: r.FirstSeenAt, LastModifiedAt: r.UpdatedAt,
			LastAction: r.LastAction(), DeletedAt: r.DeletedAt, PrunedAt: r.PrunedAt, Cursor: EncodeCursor(r)})
		if err != nil {
			t.Fatal(err)
		}
		got, err := appendMetadata([]byte("prefix"), r)
		if err != nil || string(got) != "prefix"+string(want) {
			t.Errorf("appendMetadata(%s) = %s, %v; want prefix%s", r.ID, got, err, want)
		}
	}
	// Times json.Marshal refuses are refused.
	bad := &Record{ID: "h", FirstSeenAt: first, UpdatedAt: first.AddDate(9000, 0, 0)}
	if _, err := appendMetadata(nil, bad); err == nil {
		t.Errorf("appendMetadata of a time in year %d = nil error, want json.Marshal's", bad.UpdatedAt.Year())
	}
	bad = &Record{ID: "i", FirstSeenAt: first.In(time.FixedZone("z", 25*3600)), UpdatedAt: first}
	if _, err := appendMetadata(nil, bad); err == nil {
		t.Error("appendMetadata of a time 25 hours from UTC = nil error, want json.Marshal's")
	}
}

// TestWriteRecordMatchesJSON checks the records GET /records writes
// against the payload with json.Marshal's _nango_metadata added (its id
// alone when pruned), decoded.
func TestWriteRecordMatchesJSON(t *testing.T) {
	kr, err := secret.NewKeyring(secret.Key{ID: "k1", Secret: make([]byte, 32)})
	if err != nil {
		t.Fatal(err)
	}
	s := &Service{cfg: Config{Keyring: kr}}
	at := time.Date(2025, 3, 4, 5, 6, 7, 123000, time.UTC)
	for _, payload := range []string{`{"id":"a","n":1}`, ` { "id" : "b" } `, `{}`, ""} {
		r := &Record{ID: "a\"<", FirstSeenAt: at, UpdatedAt: at.Add(time.Second), Seq: 42}
		if payload != "" {
			if r.SealedPayload, err = kr.Seal(t.Context(), PurposeRecordPayload, []byte(payload)); err != nil {
				t.Fatal(err)
			}
		} else {
			r.PrunedAt = &at
		}
		var buf bytes.Buffer
		buf.WriteString("[")
		if err := s.writeRecord(&buf, r); err != nil {
			t.Fatal(err)
		}
		buf.WriteString("]")
		var got []map[string]any
		if err := json.Unmarshal(buf.Bytes(), &got); err != nil || len(got) != 1 {
			t.Fatalf("writeRecord(%q) wrote %s: %v", payload, buf.Bytes(), err)
		}
		want := map[string]any{}
		if payload != "" {
			_ = json.Unmarshal([]byte(payload), &want)
		} else {
			want["id"] = r.ID
		}
		meta, _ := json.Marshal(recordMetadata{FirstSeenAt: r.FirstSeenAt, LastModifiedAt: r.UpdatedAt,
			LastAction: r.LastAction(), DeletedAt: r.DeletedAt, PrunedAt: r.PrunedAt, Cursor: EncodeCursor(r)})
		var m any
		_ = json.Unmarshal(meta, &m)
		want["_nango_metadata"] = m
		wb, _ := json.Marshal(want)
		gb, _ := json.Marshal(got[0])
		if !bytes.Equal(wb, gb) {
			t.Errorf("writeRecord(%q) = %s, want %s", payload, gb, wb)
		}
	}
}
