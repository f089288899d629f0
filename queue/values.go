package queue

import (
	"bytes"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"unicode/utf8"
)

// IDPattern is the shape of a record ID (SPEC §3.1).
var IDPattern = regexp.MustCompile(`^[A-Z][A-Z0-9]*(-[A-Za-z0-9]+)+$`)

// ValidID reports whether s is a record ID.
func ValidID(s string) bool { return IDPattern.MatchString(s) }

// matchID finds an ID at the start of heading text b. It returns the ID's length and the
// title that follows it, or 0 when b does not begin with an ID. After the ID comes the end of
// the text, a space, a tab or a colon.
func matchID(b []byte) (n int, title []byte) {
	if len(b) == 0 || b[0] < 'A' || b[0] > 'Z' {
		return 0, nil
	}
	i := 1
	for i < len(b) && (isUpper(b[i]) || isDigit(b[i])) {
		i++
	}
	groups := 0
	for i+1 < len(b) && b[i] == '-' && isAlnum(b[i+1]) {
		i++
		for i < len(b) && isAlnum(b[i]) {
			i++
		}
		groups++
	}
	if groups == 0 {
		return 0, nil
	}
	if i < len(b) && b[i] != ' ' && b[i] != '\t' && b[i] != ':' {
		return 0, nil
	}
	rest := b[i:]
	for len(rest) > 0 && (rest[0] == ' ' || rest[0] == '\t' || rest[0] == ':') {
		rest = rest[1:]
	}
	// "TASK-1 — Title": drop the dash that separates ID and title.
	for _, sep := range [][]byte{[]byte("— "), []byte("– "), []byte("- ")} {
		if bytes.HasPrefix(rest, sep) {
			rest = rest[len(sep):]
			break
		}
	}
	return i, rest
}

func isUpper(c byte) bool { return c >= 'A' && c <= 'Z' }
func isDigit(c byte) bool { return c >= '0' && c <= '9' }
func isAlnum(c byte) bool { return isDigit(c) || isUpper(c) || (c >= 'a' && c <= 'z') }

// normalizeName returns a field name in the form used to compare names: lower case, with
// space, '-' and '_' all read as ' '.
func normalizeName(s string) string {
	b := []byte(strings.TrimSpace(s))
	for i, c := range b {
		b[i] = normByte(c)
	}
	return string(b)
}

func normByte(c byte) byte { return normBytes[c] }

// normBytes maps each byte to its normalized form: A-Z to lower case, - and _ to a space.
var normBytes = func() (t [256]byte) {
	for i := range t {
		c := byte(i)
		switch {
		case c >= 'A' && c <= 'Z':
			c += 'a' - 'A'
		case c == '-' || c == '_':
			c = ' '
		}
		t[i] = c
	}
	return t
}()

// fieldKey sums up a trimmed field name for a quick comparison, without allocating: its
// length and its first four and last three bytes, normalized, mixed into 32 bits. Names with
// different keys differ (after normalizing); names with the same key are compared whole.
// (Reading a queue makes a key for every field, so it must be cheap.)
func fieldKey(b []byte) uint32 {
	k := uint64(len(b) & 0xff)
	for i := 0; i < len(b) && i < 4; i++ {
		k = k<<8 | uint64(normBytes[b[i]])
	}
	for i := max(4, len(b)-3); i < len(b); i++ {
		k = k<<8 | uint64(normBytes[b[i]])
	}
	return uint32(k * 0x9e3779b97f4a7c15 >> 32)
}

// keyBit maps a field key to one bit of a 64-bit set of keys (checkedMask).
func keyBit(k uint32) uint64 { return 1 << (k >> 26) }

func equalFoldASCII(b []byte, s string) bool {
	if len(b) != len(s) {
		return false
	}
	for i := range b {
		c := b[i]
		if c >= 'A' && c <= 'Z' {
			c += 'a' - 'A'
		}
		if c != s[i] {
			return false
		}
	}
	return true
}

// canonicalNames gives the spelling written for a new row of a known field (SPEC §3.3).
var canonicalNames = func() map[string]string {
	m := map[string]string{}
	for _, n := range []string{
		"Status", "Category", "Mode", "Complexity", "Priority", "Depends On", "Test IDs",
		"Test File", "Test Command", "Build Command", "Integration Level",
		"External Dependencies", "Mock Policy", "Required Services", "Skip If Unavailable",
		"Agent", "Source Issue", "Remediation", "Retry-Count", "Max-Retries",
		"Failure-Signature", "Previous-Signatures", "Signature-Repeat-Count", "Halted",
		"Halt-Reason", "Auto-Retry", "Type", "Source", "Created", "Source Task", "Task Ref",
		"Root Cause", "Blocking", "TDD",
	} {
		m[normalizeName(n)] = n
	}
	return m
}()

// CanonicalName returns the spelling of a known field name, or name itself.
func CanonicalName(name string) string {
	if c, ok := canonicalNames[normalizeName(name)]; ok {
		return c
	}
	return strings.TrimSpace(name)
}

// SameName reports whether two field names name the same field.
func SameName(a, b string) bool { return sameName(a, b) }

// sameName compares two field names as normalizeName would, without allocating: validate
// compares every field of a 10,000-task queue several times.
func sameName[A, B ~string | ~[]byte](a A, b B) bool {
	a, b = trimASCII(a), trimASCII(b)
	if len(a) != len(b) {
		return false
	}
	for i := 0; i < len(a); i++ {
		if normByte(a[i]) != normByte(b[i]) {
			return false
		}
	}
	return true
}

// trimASCII trims what strings.TrimSpace trims from a field name that is ASCII.
func trimASCII[S ~string | ~[]byte](s S) S {
	for len(s) > 0 && asciiSpace(s[0]) {
		s = s[1:]
	}
	for len(s) > 0 && asciiSpace(s[len(s)-1]) {
		s = s[:len(s)-1]
	}
	return s
}

func asciiSpace(c byte) bool {
	return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\v' || c == '\f'
}

// Task statuses (SPEC §3.3).
const (
	StatusPending    = "pending"
	StatusInProgress = "in_progress"
	StatusCompleted  = "completed"
	StatusFailed     = "failed"
	StatusHalted     = "halted"
	StatusBlocked    = "blocked"
	StatusSkipped    = "skipped"
)

var taskStatuses = map[string]string{
	"pending": StatusPending, "in_progress": StatusInProgress, "in-progress": StatusInProgress,
	"completed": StatusCompleted, "complete": StatusCompleted, "done": StatusCompleted,
	"failed": StatusFailed, "halted": StatusHalted, "blocked": StatusBlocked,
	"skipped": StatusSkipped,
}

var issueStatuses = map[string]string{
	"pending": "pending", "accepted": "accepted", "in_progress": "in_progress",
	"in-progress": "in_progress", "completed": "completed", "complete": "completed",
	"duplicate": "duplicate", "wont_fix": "wont_fix",
}

// NormalizeStatus returns the canonical form of a status of the given kind of queue, and
// whether it is one.
func NormalizeStatus(k Kind, s string) (string, bool) {
	m := taskStatuses
	if k == Issues {
		m = issueStatuses
	}
	v, ok := m[strings.ToLower(strings.TrimSpace(s))]
	return v, ok
}

// IsEmpty reports whether a value means empty (SPEC §3.2).
func IsEmpty(v string) bool {
	switch strings.TrimSpace(v) {
	case "", "-", "None", "none", "[]":
		return true
	}
	return false
}

// List splits a list value: `A, B, C` or `[A, B, C]`.
func List(v string) []string {
	return appendList(nil, []byte(v), func(item []byte) string { return string(item) })
}

// appendList appends the items of the list value v (see List) to out, each made a string by
// str.
func appendList(out []string, v []byte, str func([]byte) string) []string {
	v = bytes.TrimSpace(v)
	switch string(v) {
	case "", "-", "None", "none", "[]": // IsEmpty
		return out
	}
	if len(v) >= 2 && v[0] == '[' && v[len(v)-1] == ']' {
		v = v[1 : len(v)-1]
	}
	for len(v) > 0 {
		item, rest, _ := bytes.Cut(v, []byte{','})
		if item = bytes.TrimSpace(item); len(item) > 0 {
			out = append(out, str(item))
		}
		v = rest
	}
	return out
}

// Bool reads a boolean value; empty reads as false.
func Bool(v string) (bool, error) {
	if IsEmpty(v) {
		return false, nil
	}
	switch strings.ToLower(strings.TrimSpace(v)) {
	case "true":
		return true, nil
	case "false":
		return false, nil
	}
	return false, fmt.Errorf("%q is not true or false", v)
}

// Int reads a non-negative integer value; empty reads as 0.
func Int(v string) (int, error) {
	if IsEmpty(v) {
		return 0, nil
	}
	n, err := strconv.Atoi(strings.TrimSpace(v))
	if err != nil || n < 0 {
		return 0, fmt.Errorf("%q is not a non-negative integer", v)
	}
	return n, nil
}

var hex16 = regexp.MustCompile(`^[0-9a-f]{16}$`)

// CheckValue checks a value against the syntax of the field it is written to (SPEC §3.2,
// §3.3, §8). It returns nil for fields it does not know.
func CheckValue(k Kind, name, v string) error {
	if strings.ContainsAny(v, "\r\n") {
		return fmt.Errorf("value of %s has a line break", name)
	}
	// A queue file is text (SPEC §4.1): a value must not make it one that does not parse.
	if strings.IndexByte(v, 0) >= 0 {
		return fmt.Errorf("value of %s has a NUL byte", name)
	}
	if !utf8.ValidString(v) {
		return fmt.Errorf("value of %s is not valid UTF-8", name)
	}
	return checkSyntax(k, name, v)
}

// checkSyntax is CheckValue for a value that has no line break, as no table cell has.
func checkSyntax(k Kind, name, v string) error {
	var buf [32]byte
	norm := append(buf[:0], trimASCII(name)...)
	for i, c := range norm {
		norm[i] = normByte(c)
	}
	switch string(norm) {
	case "status":
		if _, ok := NormalizeStatus(k, v); !ok {
			return fmt.Errorf("unknown status %q", v)
		}
	case "retry count", "max retries", "signature repeat count":
		if _, err := Int(v); err != nil {
			return fmt.Errorf("%s: %v", name, err)
		}
	case "halted", "auto retry", "blocking", "skip if unavailable":
		if _, err := Bool(v); err != nil {
			return fmt.Errorf("%s: %v", name, err)
		}
	case "failure signature":
		if !IsEmpty(v) && !hex16.MatchString(strings.TrimSpace(v)) {
			return fmt.Errorf("%s: %q is not 16 lower-case hex digits", name, v)
		}
	case "previous signatures":
		for _, s := range List(v) {
			if !hex16.MatchString(s) {
				return fmt.Errorf("%s: %q is not 16 lower-case hex digits", name, s)
			}
		}
	case "mode":
		if !IsEmpty(v) {
			switch strings.ToLower(strings.TrimSpace(v)) {
			case "write", "verify":
			default:
				return fmt.Errorf("mode %q is not write or verify", v)
			}
		}
	case "complexity":
		if !IsEmpty(v) {
			switch strings.ToLower(strings.TrimSpace(v)) {
			case "easy", "normal", "complex":
			default:
				return fmt.Errorf("complexity %q is not easy, normal or complex", v)
			}
		}
	case "tdd":
		if !IsEmpty(v) && !strings.EqualFold(strings.TrimSpace(v), "exempt") {
			return fmt.Errorf("TDD %q is not exempt", v)
		}
	}
	return nil
}

// checkedNames are the fields whose values CheckValue checks, normalized. Any other field
// passes it unless its value has a line break, which a table cell cannot have; so validate
// looks only at these (by their fieldKey, without allocating).
var checkedNames = []string{
	"status", "retry count", "max retries", "signature repeat count", "halted", "auto retry",
	"blocking", "skip if unavailable", "failure signature", "previous signatures", "mode",
	"complexity", "tdd",
}

var checkedKeys = func() []uint32 {
	out := make([]uint32, len(checkedNames))
	for i, n := range checkedNames {
		out[i] = fieldKey([]byte(n))
	}
	return out
}()

// checkedMask has the keyBit of each of checkedKeys.
var checkedMask = func() uint64 {
	var m uint64
	for _, k := range checkedKeys {
		m |= keyBit(k)
	}
	return m
}()

// quickValid reports whether the raw cell b is certainly a well-formed value of the field
// whose normalized name is name (one of checkedNames), without allocating. It answers false
// when unsure; then checkSyntax decides. Most cells of a queue are the common words it
// knows, and validate checks every one.
func quickValid(k Kind, name string, b []byte) bool {
	switch name {
	case "status":
		m := taskStatuses
		if k == Issues {
			m = issueStatuses
		}
		_, ok := m[string(b)]
		return ok
	case "retry count", "max retries", "signature repeat count":
		if len(b) == 0 || len(b) > 9 {
			return false
		}
		for _, c := range b {
			if c < '0' || c > '9' {
				return false
			}
		}
		return true
	case "halted", "auto retry", "blocking", "skip if unavailable":
		return string(b) == "true" || string(b) == "false"
	case "mode":
		return string(b) == "write" || string(b) == "verify"
	case "complexity":
		return string(b) == "easy" || string(b) == "normal" || string(b) == "complex"
	case "failure signature":
		return hex16.Match(b)
	}
	return false
}

// checkedName returns the normalized name of field f when CheckValue may refuse a table
// cell of it (and "" when it may not).
func checkedName(f Field) string {
	if checkedMask&keyBit(f.key) == 0 {
		return "" // most fields: one test rules them out
	}
	for i, k := range checkedKeys {
		if f.key == k {
			return checkedNames[i]
		}
	}
	return ""
}

// EscapeCell escapes a value for a table cell: `|` becomes `\|`.
func EscapeCell(v string) string { return strings.ReplaceAll(v, "|", `\|`) }

// LongestBacktickRun returns the length of the longest run of backticks in s: a code fence
// or code span around s must be longer, so that nothing in s can close it.
func LongestBacktickRun(s string) int {
	longest, run := 0, 0
	for i := 0; i < len(s); i++ {
		if s[i] == '`' {
			run++
			longest = max(longest, run)
		} else {
			run = 0
		}
	}
	return longest
}
