package tdd

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"unicode"

	"github.com/orchestrator/orchestrator/internal/lazyre"
	"github.com/orchestrator/orchestrator/queue"
)

// An AC is one acceptance criterion of a requirement.
type AC struct {
	ID   string // AC-<PREFIX>.<N>, e.g. AC-STE.1
	N    int    // the number after the dot
	Text string // the item's text, the ID included, as written (continuation lines joined)
	Line int    // the item's first line in the FR file
}

// An FR is a functional requirement: its ID, where it was read from, its title (its first
// heading) and its acceptance criteria in file order.
type FR struct {
	ID    string
	Path  string
	Title string
	ACs   []AC
}

// acID finds an acceptance criterion's ID: AC-<PREFIX>.<N>, the prefix letters, digits
// and dashes.
var acID = lazyre.New(`\bAC-([A-Za-z0-9]+(?:-[A-Za-z0-9]+)*)\.([0-9]+)\b`)

// listItem matches a list item's marker and what follows it.
var listItem = lazyre.New(`^( {0,3})([-*+]|[0-9]{1,9}[.)])(\s+|$)(.*)$`)

// heading matches an ATX heading.
var heading = lazyre.New(`^ {0,3}(#{1,6})(?:\s+(.*?))?\s*#*\s*$`)

// Resolve returns the path of a requirement's file and its ID: arg is an FR ID, whose
// file is specs/frs/<ID>.md under root, or a path to the file (it ends in .md or holds a
// slash), whose ID is its name without .md.
func Resolve(root, arg string) (path, id string) {
	if strings.HasSuffix(arg, ".md") || strings.ContainsRune(arg, '/') || strings.ContainsRune(arg, filepath.Separator) {
		path = arg
		if !filepath.IsAbs(path) {
			if abs, err := filepath.Abs(path); err == nil {
				path = abs
			}
		}
		return path, strings.TrimSuffix(filepath.Base(arg), ".md")
	}
	return filepath.Join(root, "specs", "frs", arg+".md"), arg
}

// Load reads and parses the requirement file at path, whose ID is id.
func Load(path, id string) (*FR, error) {
	src, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	return Parse(path, id, src)
}

// Parse reads a requirement file: the items of its "## Acceptance Criteria" section, each
// of which must carry one AC ID. Errors name the file and line (*queue.ParseError): no such
// section, a section without items, an item without an AC ID, a duplicate AC ID, two ACs of
// one number, an ID that cannot name tasks. Headings and items inside fenced code are not
// read.
func Parse(path, id string, src []byte) (*FR, error) {
	fail := func(line int, format string, args ...any) error {
		return &queue.ParseError{Path: path, Line: line, Msg: fmt.Sprintf(format, args...)}
	}
	if !queue.ValidID("TASK-" + TaskStem(id) + "-RED") {
		return nil, fail(1, "%q cannot name the cycle's tasks (TASK-%s-RED is not a task ID)", id, TaskStem(id))
	}
	fr := &FR{ID: id, Path: path}
	lines := strings.Split(string(bytes.ReplaceAll(src, []byte("\r\n"), []byte("\n"))), "\n")
	in := false  // inside the Acceptance Criteria section
	found := 0   // the section's heading line
	fence := ""  // the open code fence, if any
	var cur *AC  // the item being read
	content := 0 // the column of the current item's content: deeper lines are its own
	var errs queue.ParseErrors
	seen := map[string]int{}
	nums := map[int]string{}
	kind := 0 // how the current criterion was written (kindList, …)
	begin := func(text string, n, k int) {
		idm := acID().FindStringSubmatch(text)
		num, _ := strconv.Atoi(idm[2])
		ac := AC{ID: idm[0], N: num, Text: text, Line: n}
		if first, dup := seen[ac.ID]; dup {
			errs = append(errs, &queue.ParseError{Path: path, Line: n, Msg: fmt.Sprintf("duplicate AC ID %s (first at line %d)", ac.ID, first)})
			return
		}
		if other, dup := nums[num]; dup {
			errs = append(errs, &queue.ParseError{Path: path, Line: n, Msg: fmt.Sprintf("%s has the number of %s: each AC's number names its task (TASK-%s-AC%d)", ac.ID, other, TaskStem(id), num)})
			return
		}
		seen[ac.ID], nums[num] = n, ac.ID
		cur, kind = &ac, k
	}
	end := func() {
		kind = 0
		if cur == nil {
			return
		}
		cur.Text = strings.TrimSpace(cur.Text)
		fr.ACs = append(fr.ACs, *cur)
		cur = nil
	}
	for i, line := range lines {
		n := i + 1
		trimmed := strings.TrimSpace(line)
		if fence != "" {
			if strings.HasPrefix(trimmed, fence) && strings.Trim(trimmed, fence[:1]) == "" {
				fence = ""
			}
			if cur != nil {
				cur.Text += "\n" + line
			}
			continue
		}
		if strings.HasPrefix(trimmed, "```") || strings.HasPrefix(trimmed, "~~~") {
			fence = trimmed[:3]
			for _, c := range trimmed[3:] {
				if string(c) != fence[:1] {
					break
				}
				fence += fence[:1]
			}
			if cur != nil {
				cur.Text += "\n" + line
			}
			continue
		}
		if m := heading().FindStringSubmatch(line); m != nil {
			level := len(m[1])
			if fr.Title == "" && level == 1 {
				fr.Title = strings.TrimSpace(m[2])
			}
			if in && level <= 2 {
				end()
				in = false
			}
			if level == 2 && strings.EqualFold(strings.TrimSpace(m[2]), "Acceptance Criteria") {
				if found != 0 {
					errs = append(errs, &queue.ParseError{Path: path, Line: n, Msg: fmt.Sprintf("a second ## Acceptance Criteria section (the first is at line %d)", found)})
					continue
				}
				in, found = true, n
			} else if in {
				end() // a sub-heading ends the item before it
				if text := strings.TrimSpace(m[2]); leadingID(text) {
					// A criterion as a sub-heading: "### AC-STE.1: Title", its text below.
					begin(text, n, kindHeading)
				}
			}
			continue
		}
		if !in {
			continue
		}
		if m := listItem().FindStringSubmatch(line); m != nil && !(cur != nil && indentOf(line) >= content) && !(kind == kindHeading && !leadingID(m[4])) {
			end()
			content = len(m[1]) + len(m[2]) + 1
			text := m[4]
			if !acID().MatchString(text) {
				errs = append(errs, &queue.ParseError{Path: path, Line: n, Msg: fmt.Sprintf("acceptance criterion without an AC ID (AC-<PREFIX>.<N>): %q", clip(trimmed, 60))})
				continue
			}
			begin(text, n, kindList)
			continue
		}
		if strings.HasPrefix(trimmed, "|") {
			// A table of criteria: a row whose first cell holds an AC ID is one.
			cells := strings.Split(strings.Trim(trimmed, "|"), "|")
			if leadingID(strings.TrimSpace(cells[0])) {
				end()
				begin(strings.Join(strings.Fields(strings.ReplaceAll(strings.Trim(trimmed, "|"), "|", " ")), " "), n, kindRow)
				continue
			}
			if kind == kindRow {
				continue // the header or the separator row
			}
		}
		if leadingID(trimmed) && indentOf(line) < 4 {
			// A criterion as a line of its own: "AC-STE.1: text" or "**AC-STE.1** text".
			end()
			begin(trimmed, n, kindPara)
			continue
		}
		switch {
		case cur == nil:
		case kind == kindHeading, kind == kindList && (trimmed == "" || indentOf(line) > 0),
			kind == kindPara && trimmed != "":
			// A continuation of the criterion: its own lines, a nested list, its text
			// below its heading.
			cur.Text += "\n" + line
			continue
		}
		if trimmed != "" || kind == kindPara || kind == kindRow {
			end()
		}
	}
	end()
	if found == 0 {
		errs = append(errs, &queue.ParseError{Path: path, Line: max(1, len(lines)-boolInt(len(lines) > 1 && lines[len(lines)-1] == "")), Msg: "no \"## Acceptance Criteria\" section"})
	} else if len(fr.ACs) == 0 && len(errs) == 0 {
		errs = append(errs, &queue.ParseError{Path: path, Line: found, Msg: "the Acceptance Criteria section has no items"})
	}
	if len(errs) == 1 {
		return nil, errs[0]
	}
	if len(errs) > 1 {
		return nil, errs
	}
	return fr, nil
}

// How a criterion is written in the section.
const (
	kindList    = iota + 1 // a list item (its own ID first in it)
	kindPara               // a line that starts with its ID
	kindHeading            // a sub-heading that starts with its ID, its text below
	kindRow                // a table row whose first cell holds its ID
)

// leadingID reports whether text starts with an AC ID, after emphasis, code marks or a
// task-list box.
func leadingID(text string) bool {
	text = strings.TrimLeft(strings.TrimPrefix(strings.TrimPrefix(text, "[ ] "), "[x] "), "*_`[ ")
	m := acID().FindStringIndex(text)
	return m != nil && m[0] == 0
}

// indentOf returns the width of a line's leading white space, a tab counted as four.
func indentOf(line string) int {
	n := 0
	for _, c := range line {
		switch c {
		case ' ':
			n++
		case '\t':
			n += 4
		default:
			return n
		}
	}
	return n
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}

func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}

// TaskStem returns the part of the cycle's task IDs that names the requirement: its ID with
// every character that is not a letter, a digit or a dash written as a dash, upper-cased
// ("ste-001" → "STE-001").
func TaskStem(id string) string {
	return strings.ToUpper(strings.Map(func(r rune) rune {
		if r < unicode.MaxASCII && (unicode.IsLetter(r) || unicode.IsDigit(r)) || r == '-' {
			return r
		}
		return '-'
	}, id))
}

// TestToken returns how an AC ID appears in the names of its tests: lower case, every
// character that is not a letter or a digit written as '_' (AC-STE.1 → ac_ste_1, found in
// TestAC_STE_1 and test_ac_ste_1).
func TestToken(id string) string {
	return strings.ToLower(strings.Map(func(r rune) rune {
		if unicode.IsLetter(r) || unicode.IsDigit(r) {
			return r
		}
		return '_'
	}, id))
}
