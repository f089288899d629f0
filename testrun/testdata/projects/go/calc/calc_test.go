package calc

import "testing"

func TestAdd(t *testing.T) {
	if Add(1, 2) != 3 {
		t.Fatal("1+2 != 3")
	}
}

func TestSub(t *testing.T) {
	if got := Sub(3, 1); got != 2 {
		t.Fatalf("Sub(3, 1) = %d, want 2", got)
	}
}

func TestTable(t *testing.T) {
	for _, c := range []struct {
		name       string
		a, b, want int
	}{{"add ok", 1, 1, 2}, {"sub wrong", 3, -1, 4}, {"(weird) [name]", 0, 0, 0}} {
		t.Run(c.name, func(t *testing.T) {
			if got := Add(c.a, c.b); got != c.want {
				t.Errorf("Add(%d, %d) = %d, want %d", c.a, c.b, got, c.want)
			}
			if c.name == "sub wrong" {
				t.Error("this case always fails")
			}
		})
	}
}

func TestLater(t *testing.T) { t.Skip("not yet") }
