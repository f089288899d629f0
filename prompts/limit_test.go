package prompts

import (
	"fmt"
	"strings"
	"testing"
	"unicode/utf8"
)

// TestLongValuesCut checks that no value goes into a prompt longer than MaxValue bytes: a
// 20 MB field, body, file, test command or gate output is cut, with a note of how many bytes
// went, and the prompt stays valid UTF-8 when the cut falls inside a character.
func TestLongValuesCut(t *testing.T) {
	const big = 20 << 20
	huge := strings.Repeat("x", big)
	// "é" is two bytes: starting one byte in, MaxValue falls in the middle of a character.
	accented := "x" + strings.Repeat("é", big/2)
	root := repo(t, map[string]string{"big_test.go": huge, "ok_test.go": "small\n"})
	in := input("implementer")
	in.Root = root
	in.Allowlist = []string{"big_test.go", "ok_test.go"}
	in.Include = in.Allowlist
	in.Title = accented
	in.Fields = append(in.Fields, Field{"Notes", huge}, Field{"Mock Policy", "none"})
	in.Body = accented
	in.TestCommand = "go test " + huge
	in.LastGateOutput = "FIRST LINE\n" + huge + "\nLAST LINE\n"
	in.Attempt = 2
	got, err := Render(in, "")
	if err != nil {
		t.Fatal(err)
	}
	if len(got) > 7*MaxValue {
		t.Errorf("prompt is %d bytes, want at most about six values of %d", len(got), MaxValue)
	}
	if !utf8.ValidString(got) {
		t.Error("prompt is not valid UTF-8")
	}
	for _, want := range []string{
		fmt.Sprintf("| Notes | %s [... %d bytes cut] |\n", strings.Repeat("x", MaxValue), big-MaxValue),
		"| Mock Policy | none |\n",
		fmt.Sprintf("%s\n[... %d bytes cut]\n```", strings.Repeat("x", MaxValue), big-MaxValue), // the file
		fmt.Sprintf("[... %d bytes cut]\n", len(in.LastGateOutput)-MaxValue),
		"\nLAST LINE\n",
		"### ok_test.go\n\n```\nsmall\n```",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("prompt lacks %.80q", want)
		}
	}
	if strings.Contains(got, "FIRST LINE") {
		t.Error("the gate output kept its beginning; it should keep its end")
	}
	// Title and body: cut back to a whole character, MaxValue-1 bytes kept.
	kept := "x" + strings.Repeat("é", (MaxValue-1)/2)
	if note := fmt.Sprintf("%s [... %d bytes cut]", kept, len(accented)-len(kept)); !strings.Contains(got, note) {
		t.Errorf("title not cut at a character: lacks %.80q", note[len(note)-60:])
	}
	if note := fmt.Sprintf("%s\n[... %d bytes cut]", kept, len(accented)-len(kept)); !strings.Contains(got, note) {
		t.Error("body not cut at a character")
	}
}

// TestShortValuesKept checks that a value of exactly MaxValue bytes is not cut.
func TestShortValuesKept(t *testing.T) {
	v := strings.Repeat("y", MaxValue)
	root := repo(t, map[string]string{"f_test.go": v})
	in := input("test-writer")
	in.Root, in.Allowlist, in.Include = root, []string{"f_test.go"}, []string{"f_test.go"}
	in.Fields = append(in.Fields, Field{"Notes", v})
	in.Body = v
	got, err := Render(in, "")
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(got, "bytes cut]") {
		t.Error("a value of MaxValue bytes was cut")
	}
}
