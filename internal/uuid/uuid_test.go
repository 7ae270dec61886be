package uuid

import (
	"testing"

	"github.com/embedauth/connect/internal/pgtest"
)

var cases = []struct {
	in, want string
	ok       bool
}{
	{"a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11", "a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11", true},
	{"A0EEBC99-9C0B-4EF8-BB6D-6BB9BD380A11", "a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11", true},
	{"{a0eebc99-9c0b4ef8-bb6d6bb9-bd380a11}", "a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11", true},
	{"a0eebc999c0b4ef8bb6d6bb9bd380a11", "a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11", true},
	{"a0ee-bc99-9c0b-4ef8-bb6d-6bb9-bd38-0a11", "a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11", true},
	{"{a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11", "", false},
	{"a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11}", "", false},
	{"a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a1", "", false},
	{"a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a111", "", false},
	{"a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11-", "", false},
	{"a0eebc99--9c0b-4ef8-bb6d-6bb9bd380a11", "", false},
	{"a0eeb-c99-9c0b-4ef8-bb6d-6bb9bd380a11", "", false},
	{"g0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11", "", false},
	{"urn:uuid:a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11", "", false},
	{" a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11", "", false},
	{"", "", false},
	{"{}", "", false},
}

func TestParse(t *testing.T) {
	t.Parallel()
	for _, c := range cases {
		got, ok := Parse(c.in)
		if got != c.want || ok != c.ok {
			t.Errorf("Parse(%q) = %q, %v; want %q, %v", c.in, got, ok, c.want, c.ok)
		}
	}
	for range 100 {
		id := New()
		if got, ok := Parse(id); !ok || got != id {
			t.Fatalf("Parse(New() = %q) = %q, %v", id, got, ok)
		}
		if id[14] != '4' || id[19] < '8' || id[19] > 'b' {
			t.Fatalf("New() = %q is not a version 4, variant 1 UUID", id)
		}
	}
}

// TestParseAgreesWithPostgres checks the cases against Postgres' uuid
// input, which the stores must agree with.
func TestParseAgreesWithPostgres(t *testing.T) {
	t.Parallel()
	db := pgtest.DB(t)
	for _, c := range cases {
		var got string
		err := db.QueryRowContext(t.Context(), `SELECT $1::text::uuid::text`, c.in).Scan(&got)
		if (err == nil) != c.ok || got != c.want {
			t.Errorf("Postgres reads %q as %q (error %v); Parse: %q, %v", c.in, got, err, c.want, c.ok)
		}
	}
}
