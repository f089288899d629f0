package old

import "testing"

func TestOld(t *testing.T) {
	if Old() != 1 {
		t.Fatal("Old() != 1")
	}
}
