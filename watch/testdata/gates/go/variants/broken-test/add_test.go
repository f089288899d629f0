package calc

import "testing"

func TestAdd_UNIT_001(t *testing.T) {
	if got := Add(2, 3); got != 5 {
