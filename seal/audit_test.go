package seal

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// TestAuditChecksOnlyWhatChanged: a record found sealed is not read again while its file
// is unchanged; rewritten in place (same size, its modification time set back, as a
// cheat would), renamed over, or found edited, it is checked again, and a file changed
// within the racy window is always checked. A nil Audit checks every time; a record that
// is not there is not checked.
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
	defer func(w time.Duration) { racyWindow = w }(racyWindow)

	// Within the racy window: checked every time.
	var a Audit
	racyWindow = time.Hour
	check(&a, 1, false)
	check(&a, 1, false)

	racyWindow = 0
	check(&a, 1, false) // remembered from here
	check(&a, 0, false)
	check(&a, 0, false)

	// In place, the same size, the modification time set back: the change time moves
	// all the same, once the file clock has ticked past the remembered one.
	old, _, err := stampOf(path)
	if err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(time.Minute)
	for tick := filepath.Join(dir, "tick"); ; {
		if time.Now().After(deadline) {
			t.Fatal("the file clock never moved past the record's change time")
		}
		write(tick, "tick")
		if st, _, _ := stampOf(tick); st.ctime > old.ctime {
			break
		}
	}
	write(path, "edited v1")
	if err := os.Chtimes(path, time.Unix(0, old.mtime), time.Unix(0, old.mtime)); err != nil {
		t.Fatal(err)
	}
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

	if err := os.Remove(path); err != nil {
		t.Fatal(err)
	}
	check(&a, 0, false)
	check(none, 0, false)
}
