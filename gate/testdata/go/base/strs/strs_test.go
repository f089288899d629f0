package strs

import "testing"

func TestTwice(t *testing.T) {
	if got := Twice("ab"); got != "abab" {
		t.Fatalf("Twice(ab) = %q", got)
	}
}
