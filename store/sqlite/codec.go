package sqlite

import (
	"database/sql"
	"encoding/json"
	"fmt"
	"time"

	"github.com/embedauth/connect/internal/jsonvalue"
)

// Timestamps are stored as INTEGER microseconds since the Unix epoch (UTC),
// the precision the services use, so that they sort and compare as numbers.

// micros returns t as microseconds since the Unix epoch.
func micros(t time.Time) int64 { return t.UnixMicro() }

// fromMicros returns the UTC time of us microseconds since the Unix epoch.
func fromMicros(us int64) time.Time { return time.UnixMicro(us).UTC() }

// nullMicros returns t as a nullable column value: NULL for nil.
func nullMicros(t *time.Time) sql.NullInt64 {
	if t == nil {
		return sql.NullInt64{}
	}
	return sql.NullInt64{Int64: t.UnixMicro(), Valid: true}
}

// timePtr returns the time of a nullable column, or nil.
func timePtr(v sql.NullInt64) *time.Time {
	if !v.Valid {
		return nil
	}
	t := fromMicros(v.Int64)
	return &t
}

// JSON values are stored as TEXT.

// jsonText encodes v for a TEXT column; a nil map or slice is stored as
// NULL so that nil reads back as nil.
func jsonText(v any) (sql.NullString, error) {
	if v == nil {
		return sql.NullString{}, nil
	}
	b, err := json.Marshal(v)
	if err != nil {
		return sql.NullString{}, fmt.Errorf("sqlite: encode JSON: %w", err)
	}
	if string(b) == "null" {
		return sql.NullString{}, nil
	}
	return sql.NullString{String: string(b), Valid: true}, nil
}

// fromJSON decodes a TEXT column into dst; NULL leaves dst as it is.
func fromJSON(v sql.NullString, dst any) error {
	if !v.Valid {
		return nil
	}
	if err := jsonvalue.Unmarshal(v.String, dst); err != nil {
		return fmt.Errorf("sqlite: decode JSON: %w", err)
	}
	return nil
}
