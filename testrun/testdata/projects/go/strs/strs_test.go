package strs_test

import (
	"testing"

	"example.com/proj/strs"
)

func TestUpper(t *testing.T) {
	if strs.Upper("a") != "A" {
		t.Fatal("no")
	}
}

func TestUpperEmpty(t *testing.T) {
	t.Run("empty", func(t *testing.T) {
		if strs.Upper("") != "" {
			t.Fatal("no")
		}
	})
}
