package prompts

import (
	"fmt"
	"unicode/utf8"
)

// MaxValue is the most a prompt takes from any one value: the title, a field, the body, an
// included file, the test command or the last gate output. A 20 MB cell pasted into a queue
// would otherwise go whole into every prompt of its task, and past any model's context.
const MaxValue = 64 << 10

// cutNote is what stands in for the bytes of a value beyond MaxValue.
func cutNote(n int) string { return fmt.Sprintf("[... %d bytes cut]", n) }

// head returns s if it is at most MaxValue bytes long, else its first MaxValue bytes (back
// to a whole UTF-8 character) and a note of how many bytes were cut. sep goes between the
// two: " " inside a table cell, a newline in a block of text.
func head(s, sep string) string {
	if len(s) <= MaxValue {
		return s
	}
	keep := runeStart(s, MaxValue)
	return s[:keep] + sep + cutNote(len(s)-keep)
}

// tail returns s if it is at most MaxValue bytes long, else a note of how many bytes were
// cut and its last MaxValue bytes (from a whole UTF-8 character): the end of a test run's
// output holds its summary and the failures.
func tail(s string) string {
	if len(s) <= MaxValue {
		return s
	}
	from := len(s) - MaxValue
	for from < len(s) && !utf8.RuneStart(s[from]) {
		from++
	}
	return cutNote(from) + "\n" + s[from:]
}

// runeStart returns the largest i <= n at which a UTF-8 character of s starts.
func runeStart[S ~string | ~[]byte](s S, n int) int {
	if n >= len(s) {
		return len(s)
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return n
}

// bound cuts every value of in to MaxValue bytes. Included files are cut as they are read
// (see readFile).
func bound(in Input) Input {
	in.Title = head(in.Title, " ")
	if fieldsTooLong(in.Fields) {
		fields := make([]Field, len(in.Fields))
		for i, f := range in.Fields {
			fields[i] = Field{Name: head(f.Name, " "), Value: head(f.Value, " ")}
		}
		in.Fields = fields
	}
	in.Body = head(in.Body, "\n")
	in.TestCommand = head(in.TestCommand, "\n")
	in.LastGateOutput = tail(in.LastGateOutput)
	in.Feedback = head(in.Feedback, "\n")
	if len(in.Evidence) > 0 {
		ev := make([]Evidence, len(in.Evidence))
		for i, e := range in.Evidence {
			ev[i] = Evidence{Title: head(e.Title, " "), Content: head(e.Content, "\n")}
		}
		in.Evidence = ev
	}
	return in
}

func fieldsTooLong(fields []Field) bool {
	for _, f := range fields {
		if len(f.Name) > MaxValue || len(f.Value) > MaxValue {
			return true
		}
	}
	return false
}
