package postgres

import (
	"errors"
	"net/url"
	"strings"
	"testing"
)

// FuzzRedactDSNError: whatever the password, an error that quotes the
// database URL (as url.Parse's errors do) or the password comes back
// without it.
func FuzzRedactDSNError(f *testing.F) {
	f.Add("hunter2-secret", true)
	f.Add("p@ss:w/rd", false)
	f.Add("'quoted' pass", false)
	f.Fuzz(func(t *testing.T, pw string, urlForm bool) {
		if len(pw) < 4 || strings.ContainsAny(pw, "\x00") || strings.Contains("[redacted]", pw) {
			t.Skip()
		}
		var dsn string
		if urlForm {
			dsn = "postgres://" + url.UserPassword("app", pw).String() + "@127.0.0.1:bad/appdb"
		} else {
			dsn = "host=127.0.0.1 user=app password='" + strings.NewReplacer(`\`, `\\`, `'`, `\'`).Replace(pw) + "' dbname=appdb"
		}
		for _, msg := range []string{"parse " + dsn + ": invalid port", "bad password " + pw, "fine"} {
			got := redactDSNError(errors.New(msg), dsn).Error()
			if strings.Contains(got, pw) && !strings.Contains(msg, "fine") {
				t.Fatalf("redactDSNError(%q) = %q: the password %q is still there", msg, got, pw)
			}
		}
	})
}
