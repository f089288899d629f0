package lazyre

import "testing"

func TestNewCompilesOnce(t *testing.T) {
	re := New(`^a+$`)
	first := re()
	if first != re() {
		t.Fatal("second call returned a different *regexp.Regexp")
	}
	if !first.MatchString("aaa") || first.MatchString("b") {
		t.Fatalf("%v matches the wrong strings", first)
	}
}

func TestNewPanicsOnFirstUse(t *testing.T) {
	re := New(`(`) // must not panic here
	defer func() {
		if recover() == nil {
			t.Fatal("an invalid expression did not panic on first use")
		}
	}()
	re()
}
