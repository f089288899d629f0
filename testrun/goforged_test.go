package testrun

import (
	"strings"
	"testing"
)

// TestGoReportedTwice: go test -json reports each test once; a test that ends twice was
// reported a second time by something in the test binary (an init function that prints a
// PASS line before the test fails), and the report is forged. With -count=N the repeats are
// the runner's own.
func TestGoReportedTwice(t *testing.T) {
	forged := strings.Join([]string{
		`{"Action":"start","Package":"ex.com/m/cart"}`,
		`{"Action":"output","Package":"ex.com/m/cart","Test":"TestDiscount","Output":"--- PASS: TestDiscount (0.00s)\n"}`,
		`{"Action":"pass","Package":"ex.com/m/cart","Test":"TestDiscount"}`,
		`{"Action":"run","Package":"ex.com/m/cart","Test":"TestDiscount"}`,
		`{"Action":"output","Package":"ex.com/m/cart","Test":"TestDiscount","Output":"--- FAIL: TestDiscount (0.00s)\n"}`,
		`{"Action":"fail","Package":"ex.com/m/cart","Test":"TestDiscount"}`,
		`{"Action":"fail","Package":"ex.com/m/cart"}`,
	}, "\n") + "\n"
	honest := strings.Join([]string{
		`{"Action":"run","Package":"ex.com/m/cart","Test":"TestDiscount"}`,
		`{"Action":"pass","Package":"ex.com/m/cart","Test":"TestDiscount"}`,
		`{"Action":"run","Package":"ex.com/m/cart","Test":"TestOther"}`,
		`{"Action":"pass","Package":"ex.com/m/cart","Test":"TestOther"}`,
		`{"Action":"pass","Package":"ex.com/m/cart"}`,
	}, "\n") + "\n"
	for _, tt := range []struct {
		name, command, out string
		forged             bool
	}{
		{"reported twice", "go test ./...", forged, true},
		{"honest", "go test ./...", honest, false},
		{"twice with -count=2", "go test -count=2 ./...", forged, false},
		{"twice with -count=1", "go test -count=1 ./...", forged, true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			f := newFeeder(invocation{runner: Go, command: tt.command + " -json"}, t.TempDir())
			f.Write([]byte(tt.out))
			res := &Result{Runner: Go}
			f.finish(res, nil)
			if (res.Forged != nil) != tt.forged {
				t.Fatalf("Forged = %+v, want forged %v", res.Forged, tt.forged)
			}
			if tt.forged && (!res.Forged.Stream || !strings.Contains(res.Forged.What, "TestDiscount is reported twice (pass, then fail)")) {
				t.Errorf("Forged = %+v", res.Forged)
			}
		})
	}
}
