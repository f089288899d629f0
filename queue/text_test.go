package queue

import (
	"errors"
	"testing"
)

// TestNotText checks that a file that is not UTF-8 text is refused, at the line of its first
// bad byte, rather than read as a queue of no tasks.
func TestNotText(t *testing.T) {
	tests := []struct {
		name string
		src  string
		want string // "" for no error
	}{
		{"text", "# Tasks\n\nnaïve — ok\n", ""},
		{"NUL", "# Tasks\n\nab\x00cd\n", "q.md:3: not a text file (a NUL byte)"},
		{"latin-1", "# Tasks\nna\xefve\n", "q.md:2: not a text file (invalid UTF-8)"},
		{"first of both", "\xff\n\x00\n", "q.md:1: not a text file (invalid UTF-8)"},
		{"NUL before bad byte", "\x00\n\xff\n", "q.md:1: not a text file (a NUL byte)"},
		{"binary", "\x7fELF\x02\x01\x01\x00\x00\x00", "q.md:1: not a text file (a NUL byte)"},
		{"truncated rune", "# Tasks\n\n\xe2\x80", "q.md:3: not a text file (invalid UTF-8)"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d, err := Parse("q.md", []byte(tt.src), Tasks)
			got := ""
			if err != nil {
				got = err.Error()
			}
			if got != tt.want {
				t.Fatalf("err = %q, want %q", got, tt.want)
			}
			if d == nil {
				t.Fatal("no Doc returned")
			}
			var pe ParseErrors
			if err != nil && !errors.As(err, &pe) {
				t.Errorf("%T is not ParseErrors", err)
			}
		})
	}
}

// TestProseText: a record's prose without its field table, line endings as LF.
func TestProseText(t *testing.T) {
	src := "# Q\r\n\r\n### TASK-001: title\r\n\r\n| Field | Value |\r\n|---|---|\r\n| Status | pending |\r\n\r\n**Objective:** add | and subtract\r\n  | an indented row\r\n- AC-X.1 adds\r\n"
	d, err := Parse("q.md", []byte(src), Tasks)
	if err != nil {
		t.Fatal(err)
	}
	rec, _ := d.Record("TASK-001")
	if got, want := d.ProseText(rec), "\n\n**Objective:** add | and subtract\n- AC-X.1 adds\n"; got != want {
		t.Errorf("ProseText = %q, want %q", got, want)
	}
}
