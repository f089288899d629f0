package queue

import (
	"fmt"
	"sort"
	"strings"
)

// KnownFields are the field names the orchestrator reads or writes in a queue record, in
// the spelling it writes (SPEC §3.3, §3.6, §8, §16). Any other field is kept and ignored;
// CheckVocabulary warns about one that is spelt nearly like one of these.
var KnownFields = []string{
	"Status", "Category", "Mode", "Complexity", "Priority", "Depends On", "Dependencies",
	"Test IDs", "Test File", "Test Command", "Build Command", "Integration Level",
	"External Dependencies", "Mock Policy", "Required Services", "Skip If Unavailable",
	"Agent", "TDD", "Source Issue", "Remediation", "Retry-Count", "Max-Retries",
	"Failure-Signature", "Previous-Signatures", "Signature-Repeat-Count", "Halted",
	"Halt-Reason", "Blocked-Reason", "Retry-Deferred", "Auto-Retry", "Commit", "Cost",
	"Tokens", "Notes", "Summary", "Type", "Source", "Created", "Source Task", "Task Ref",
	"Root Cause", "Blocking",
}

// Categories are the Category values the orchestrator knows (SPEC §3.3, §3.4), in the
// order they are suggested: `testing` (and `testing:<kind>`, such as testing:integration)
// with Mode write or no Mode makes a TEST task, `test_verification` (or Mode verify) a
// VERIFY task, `qa` a QA task, and every other category a BUILD task; `devops` and `docs`
// tasks are outside TDD ordering (SPEC §6.1), and `refactor` is the refactorer's task of
// `orchestrator tdd`. Categories are read case-insensitively.
var Categories = []string{"testing", "test_verification", "qa", "backend", "frontend", "fullstack", "devops", "docs", "refactor"}

// knownFieldKeys maps the fieldKey of each of KnownFields to the names that have it.
var knownFieldKeys = func() map[uint32][]string {
	m := map[uint32][]string{}
	for _, n := range KnownFields {
		k := fieldKey([]byte(n))
		m[k] = append(m[k], n)
	}
	return m
}()

// isKnownField reports whether the field name as written is one of KnownFields.
func isKnownField(f Field, src []byte) bool {
	for _, n := range knownFieldKeys[f.key] {
		if sameName(f.Name().Bytes(src), n) {
			return true
		}
	}
	return false
}

// CheckVocabulary reports, as warnings, the words of d that the orchestrator would read
// otherwise than a person meant, none of which is an error of the format:
//
//   - a field whose name is nearly one of KnownFields (`Categroy`): it is ignored;
//   - in a task queue, a Category that is none of Categories (`tests`): the task becomes a
//     BUILD task, or what its Mode makes it;
//   - a field table that belongs to no record, because the heading above it does not begin
//     with an ID (`### Task-001: …`) or is not of level 2 to 4: its task does not exist.
//
// A name or category met many times is reported once, at its first line, with how many
// more times it is met. The findings are in line order.
func CheckVocabulary(d *Doc) []Finding {
	var out []Finding
	type first struct {
		at   int // index in out
		more int
	}
	seen := map[string]*first{}
	add := func(key string, f Finding) {
		if s, ok := seen[key]; ok {
			s.more++
			return
		}
		seen[key] = &first{at: len(out)}
		out = append(out, f)
	}
	near := map[string]string{} // suggestion by normalized unknown name
	for i := range d.Records {
		r := &d.Records[i]
		for _, f := range d.Fields(r) {
			if isKnownField(f, d.Src) {
				continue
			}
			name := string(f.Name().Bytes(d.Src))
			norm := normalizeName(name)
			want, ok := near[norm]
			if !ok {
				want = nearField(norm)
				near[norm] = want
			}
			if want != "" {
				add("field\x00"+norm, Finding{Path: d.Path, Line: f.Line(), ID: r.ID, Severity: Warning,
					Message: fmt.Sprintf("unknown field %q is ignored: did you mean %s?", name, want)})
			}
		}
		if d.Kind != Tasks {
			continue
		}
		f, ok := d.Lookup(r, "Category")
		if !ok {
			continue
		}
		if raw := f.Value().Bytes(d.Src); knownCategory(string(raw)) { // no copy: the usual case
			continue
		}
		v := d.Value(f)
		c := lowerTrim(v)
		if IsEmpty(c) || knownCategory(c) {
			continue
		}
		kind := kindOf(c, lowerTrim(d.Get(r, "Mode")))
		msg := fmt.Sprintf("category %q is not one the orchestrator knows, so this is a %s task", strings.TrimSpace(v), kind)
		if want := nearCategory(c); want != "" {
			msg += fmt.Sprintf(": did you mean %s?", want)
		} else {
			msg += " (known: " + knownCategoriesText + ")"
		}
		add("category\x00"+c, Finding{Path: d.Path, Line: f.Line(), ID: r.ID, Severity: Warning, Message: msg})
	}
	out = append(out, strayTables(d)...)
	for key, s := range seen {
		if s.more == 0 {
			continue
		}
		what := "field"
		if strings.HasPrefix(key, "category") {
			what = "task"
		}
		if s.more == 1 {
			out[s.at].Message += fmt.Sprintf(" (and one more %s)", what)
		} else {
			out[s.at].Message += fmt.Sprintf(" (and %d more %ss)", s.more, what)
		}
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].Line < out[j].Line })
	return out
}

// knownCategoriesText lists Categories as validate prints them.
var knownCategoriesText = strings.Replace(strings.Join(Categories, ", "), "testing,", "testing, testing:<kind>,", 1)

// knownCategory reports whether the lower-case category c is one of Categories, or
// testing:<kind>.
func knownCategory(c string) bool {
	if _, ok := plainWords[c]; ok && c != "write" && c != "verify" && c != "true" && c != "false" {
		return true
	}
	return c == "refactor" || strings.HasPrefix(c, "testing:") && len(c) > len("testing:")
}

// nearCategory returns the known category that the unknown lower-case category c is most
// likely a slip for, or "": the same words with other separators (`test-verification`),
// the same start (`test`, `tests`, `doc`), or a typo (`bakend`). A `<word>:<kind>` whose
// word is near testing gets testing:<kind>.
func nearCategory(c string) string {
	if head, kind, ok := strings.Cut(c, ":"); ok && kind != "" {
		if nearCategory(head) == "testing" {
			return "testing:" + kind
		}
		return ""
	}
	sep := strings.NewReplacer("-", "_", " ", "_").Replace(c)
	for _, k := range Categories {
		if sep == k || strings.ReplaceAll(sep, "_", "") == strings.ReplaceAll(k, "_", "") {
			return k
		}
	}
	if strings.HasPrefix(sep, "test") {
		return "testing" // test, tests, tested, test_writing: the word that makes a TEST task
	}
	if k := closest(sep, Categories); k != "" {
		return k
	}
	best, bestLen := "", 2 // at least three letters in common at the start
	for _, k := range Categories {
		n := commonPrefix(sep, k)
		if n > bestLen {
			best, bestLen = k, n
		}
	}
	return best
}

// nearField returns the known field name that the unknown normalized name is most likely a
// slip for, or "": a typo of one or two letters (one for a name of four letters or less), or
// the first words of exactly one known name (`test id` for Test IDs, `depends` for Depends
// On).
func nearField(norm string) string {
	if k := closest(norm, KnownFields); k != "" {
		return k
	}
	want := ""
	for _, k := range KnownFields {
		if strings.HasPrefix(normalizeName(k), norm+" ") {
			if want != "" {
				return "" // more than one: no guess
			}
			want = k
		}
	}
	return want
}

// closest returns the name of names nearest to s (compared normalized) within the typo
// distance (see typoDistance), the first of them on a tie, or "".
func closest(s string, names []string) string {
	best, bestD := "", 0
	for _, n := range names {
		norm := normalizeName(n)
		limit := 2
		if len(norm) <= 4 {
			limit = 1
		}
		if d := typoDistance(s, norm, limit); d <= limit && (best == "" || d < bestD) {
			best, bestD = n, d
		}
	}
	return best
}

// typoDistance returns the number of one-letter slips (a letter added, dropped, changed, or
// two neighbours swapped) that turn a into b: their optimal string alignment distance. It
// gives up above limit, returning limit+1.
func typoDistance(a, b string, limit int) int {
	if d := len(a) - len(b); d > limit || -d > limit {
		return limit + 1
	}
	prev2 := make([]int, len(b)+1)
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		rowMin := cur[0]
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			v := min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
			if i > 1 && j > 1 && a[i-1] == b[j-2] && a[i-2] == b[j-1] {
				v = min(v, prev2[j-2]+1)
			}
			cur[j] = v
			rowMin = min(rowMin, v)
		}
		if rowMin > limit {
			return limit + 1
		}
		prev2, prev, cur = prev, cur, prev2
	}
	return prev[len(b)]
}

func commonPrefix(a, b string) int {
	n := 0
	for n < len(a) && n < len(b) && a[n] == b[n] {
		n++
	}
	return n
}

// strayTables reports the field tables of d that belong to no record, at the heading above
// each (or the table's own line when no heading is above it).
func strayTables(d *Doc) []Finding {
	var out []Finding
	in := make([]bool, len(d.Tables)) // the tables inside records
	for i := range d.Records {
		r := &d.Records[i]
		for t := r.tables[0]; t < r.tables[1]; t++ {
			in[t] = true
		}
	}
	for i := range d.Tables {
		t := &d.Tables[i]
		if in[i] || !isFieldHeader(d.Src, t.Header) || !taskLike(d.Src, t) {
			continue
		}
		h := sort.Search(len(d.Headings), func(k int) bool { return d.Headings[k].Start > t.Start }) - 1
		if h < 0 {
			out = append(out, Finding{Path: d.Path, Line: t.Header.Line, Severity: Warning,
				Message: "a field table before any heading belongs to no task: it is ignored (a task is a heading of level 2 to 4 that begins with its ID, such as ### TASK-001)"})
			continue
		}
		head := d.Headings[h]
		text := strings.TrimSpace(string(head.Text.Bytes(d.Src)))
		var msg string
		if n, _ := matchID([]byte(text)); n > 0 {
			msg = fmt.Sprintf("the heading %q is of level %d, so its field table belongs to no task: it is ignored (a task heading is of level 2 to 4, ## to ####)", text, head.Level)
		} else {
			msg = fmt.Sprintf("the heading %q does not begin with a task ID, so its field table belongs to no task: it is ignored", text)
			if id := nearID(text); id != "" {
				msg += fmt.Sprintf(" (did you mean %s?", id)
			} else {
				msg += " (an ID is upper-case letters and digits, then one or more -parts, such as TASK-001 or ISSUE-20260107-032"
			}
			msg += ")"
		}
		out = append(out, Finding{Path: d.Path, Line: head.Line, Severity: Warning, Message: msg})
	}
	return out
}

// taskLike reports whether the field table t has a Status or a Category row, as a task
// has: other field tables (an issue queue's Queue Status counts) are the document's own.
func taskLike(src []byte, t *Table) bool {
	for _, row := range t.Rows {
		if len(row.Cells) > 0 && (sameName(row.Cells[0].Bytes(src), "Status") || sameName(row.Cells[0].Bytes(src), "Category")) {
			return true
		}
	}
	return false
}

// nearID returns the ID that heading text most likely meant, or "": its first word in upper
// case with _ read as - (`Task-001` is TASK-001, `task_1` TASK-1), an ID that follows a
// first word (`Task TASK-001`), or its first two words joined by - (`Task 7` is TASK-7). A
// guess without a digit is no guess: `Queue Status` is no task.
func nearID(text string) string {
	text = strings.TrimLeft(text, "`*[_ ")
	words := strings.FieldsFunc(text, func(c rune) bool {
		return !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '_')
	})
	id := func(w string) string {
		w = strings.Trim(strings.ToUpper(strings.ReplaceAll(w, "_", "-")), "-")
		if ValidID(w) && strings.ContainsAny(w, "0123456789") {
			return w
		}
		return ""
	}
	if len(words) > 1 && ValidID(words[1]) {
		return words[1] // an ID as written, after a word
	}
	var guesses []string
	if len(words) > 0 {
		guesses = append(guesses, words[0])
	}
	if len(words) > 1 {
		guesses = append(guesses, words[1], words[0]+"-"+words[1])
	}
	for _, g := range guesses {
		if w := id(g); w != "" {
			return w
		}
	}
	return ""
}
