package queue

import "testing"

// TestNearWords checks the guesses behind validate's vocabulary warnings: a slip gets the
// word it most likely meant, and a word of the person's own gets no guess.
func TestNearWords(t *testing.T) {
	for _, tt := range []struct{ kind, in, want string }{
		{"field", "Categroy", "Category"},
		{"field", "Depend On", "Depends On"},
		{"field", "Test ID", "Test IDs"},
		{"field", "Agents", "Agent"},
		{"field", "Depends", "Depends On"},
		{"field", "Owner", ""},
		{"field", "Estimate", ""},
		{"field", "Test", ""}, // Test IDs, Test File, Test Command: no guess
		{"category", "tests", "testing"},
		{"category", "test", "testing"},
		{"category", "tests:integration", "testing:integration"},
		{"category", "test-verification", "test_verification"},
		{"category", "bakend", "backend"},
		{"category", "documentation", "docs"},
		{"category", "api", ""},
		{"category", "feature", ""},
		{"id", "Task-002: Guide", "TASK-002"},
		{"id", "task_7", "TASK-7"},
		{"id", "Task 7: Seven", "TASK-7"},
		{"id", "Task TASK-CALC-RED: Tests", "TASK-CALC-RED"},
		{"id", "TASK-001. Parser", "TASK-001"},
		{"id", "Queue Status", ""},
		{"id", "Notes", ""},
	} {
		var got string
		switch tt.kind {
		case "field":
			got = nearField(normalizeName(tt.in))
		case "category":
			got = nearCategory(tt.in)
		case "id":
			got = nearID(tt.in)
		}
		if got != tt.want {
			t.Errorf("%s %q: guess %q, want %q", tt.kind, tt.in, got, tt.want)
		}
	}
}

// TestKnownWordsHaveNoWarning checks that every known field and category, in any case and
// with any of the separators field names allow, passes CheckVocabulary without a word.
func TestKnownWordsHaveNoWarning(t *testing.T) {
	src := "# Tasks\n\n"
	for i, c := range append(Categories, "Testing", "testing:e2e", "DOCS") {
		src += "### TASK-" + string(rune('A'+i)) + "1\n\n| Field | Value |\n|---|---|\n| Category | " + c + " |\n"
		for _, f := range KnownFields {
			if f != "Category" && f != "Source Task" {
				src += "| " + f + " | - |\n"
			}
		}
		src += "| source_TASK | - |\n\n"
	}
	d, err := Parse("tasks.md", []byte(src), Tasks)
	if err != nil {
		t.Fatal(err)
	}
	if fs := CheckVocabulary(d); len(fs) > 0 {
		t.Errorf("findings on known words: %v", fs)
	}
}

// BenchmarkCheckVocabulary measures validate's vocabulary warnings on a generated
// 10,000-task queue of known words, parsed once (compare with BenchmarkValidate, the rest
// of what validate does on the same queue).
func BenchmarkCheckVocabulary(b *testing.B) {
	src := genQueue(b, 10000)
	d, err := Parse("task_queue.md", src, Tasks)
	if err != nil {
		b.Fatal(err)
	}
	b.SetBytes(int64(len(src)))
	b.ReportAllocs()
	for b.Loop() {
		if fs := CheckVocabulary(d); len(fs) != 0 {
			b.Fatalf("%d findings, want none: %v", len(fs), fs[0])
		}
	}
}
