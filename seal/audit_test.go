package seal

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// TestAuditChecksOnlyWhatChanged: a record found sealed is not read again while its file
// is unchanged; rewritten in place (same size), renamed over, or found edited, it is
// checked again, and a file changed within the racy window is always checked. A nil
// Audit checks every time.
func TestAuditChecksOnlyWhatChanged(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "result.json")
	write := func(p, text string) {
		t.Helper()
		if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write(path, "sealed v1")
	calls := 0
	verify := func() error {
		calls++
		if b, _ := os.ReadFile(path); string(b) != "sealed v1" && string(b) != "sealed v2" {
			return errors.New("edited")
		}
		return nil
	}
	check := func(a *Audit, wantCalls int, wantErr bool) {
		t.Helper()
		calls = 0
		err := a.Check(path, verify)
		if calls != wantCalls || (err != nil) != wantErr {
			t.Errorf("verify called %d times (want %d), error %v (want one: %v)", calls, wantCalls, err, wantErr)
		}
	}

	// Within the racy window (a file written now): checked every time.
	var a Audit
	check(&a, 1, false)
	check(&a, 1, false)

	defer func(w time.Duration) { racyWindow = w }(racyWindow)
	racyWindow = 0
	check(&a, 1, false) // remembered from here
	check(&a, 0, false)
	check(&a, 0, false)

	write(path, "edited v1") // in place, the same size
	check(&a, 1, true)
	check(&a, 1, true) // an edited record is never remembered

	other := filepath.Join(dir, "other")
	write(other, "sealed v2")
	if err := os.Rename(other, path); err != nil {
		t.Fatal(err)
	}
	check(&a, 1, false)
	check(&a, 0, false)

	var none *Audit
	check(none, 1, false)
	check(none, 1, false)
}
