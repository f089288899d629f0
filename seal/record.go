package seal

import (
	"bytes"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"strings"
)

// Kinds of record, each its own domain: a seal made for one never verifies another.
const (
	KindVerified = "verified"      // a verified mark: task and commit
	KindRed      = "handoff-red"   // a RED hand-off manifest
	KindGreen    = "handoff-green" // a GREEN hand-off manifest
	KindBaseline = "baseline"      // the baseline
	KindResult   = "result"        // an attempt record, result.json
	KindLanding  = "landing"       // the trailers and tree of a landed commit
	KindImpact   = "impact"        // a Go package's test results under an input key
	KindSpot     = "spotcheck"     // a QA task's last spot-check decision
	KindMutation = "mutation"      // a BUILD task's last mutation result
)

// Why a record is not evidence.
var (
	// ErrUnsealed: the record has no seal (made by hand, or before records were sealed).
	ErrUnsealed = errors.New("it has no seal")
	// ErrBroken: the record's seal does not match its content.
	ErrBroken = errors.New("its seal does not match its content")
)

// An EditedError names a record that is not evidence because its seal is missing or does
// not match (Err is ErrUnsealed or ErrBroken): orchestrator state was edited outside the
// orchestrator.
type EditedError struct {
	// Record names the record: a path, or a commit.
	Record string
	Err    error
}

func (e *EditedError) Error() string {
	return fmt.Sprintf("orchestrator state was edited outside the orchestrator: %s (%v); it is not evidence", e.Record, e.Err)
}

func (e *EditedError) Unwrap() error { return e.Err }

// Edited returns an *EditedError naming record when err is ErrUnsealed or ErrBroken, else
// err itself.
func Edited(record string, err error) error {
	if errors.Is(err, ErrUnsealed) || errors.Is(err, ErrBroken) {
		return &EditedError{Record: record, Err: err}
	}
	return err
}

// sealMember is how a JSON record's seal begins: its first member.
const sealMember = "\n  \"seal\": \""

// SealJSON returns the JSON object doc (as json.MarshalIndent writes it, with two spaces)
// with its seal as a first member, "seal": the seal of doc's bytes (without the white space
// around them, so that a newline added at the end changes nothing) as a record of kind. doc
// must be an object with at least one member.
func (k *Key) SealJSON(kind string, doc []byte) ([]byte, error) {
	if k == nil {
		return nil, errors.New("seal: no key")
	}
	rest, ok := bytes.CutPrefix(doc, []byte("{"))
	if !ok || len(bytes.TrimSpace(rest)) == 0 || bytes.TrimSpace(rest)[0] == '}' {
		return nil, fmt.Errorf("seal: a %s record must be a JSON object with members", kind)
	}
	var b bytes.Buffer
	b.Grow(len(doc) + len(sealMember) + 2*32 + 3)
	b.WriteString("{" + sealMember + k.Sum(kind, bytes.TrimSpace(doc)) + "\",")
	b.Write(rest)
	return b.Bytes(), nil
}

// OpenJSON checks a record written by SealJSON and returns its content without the seal:
// the bytes that were sealed, to unmarshal. A record with no seal is ErrUnsealed, one whose
// seal does not match ErrBroken.
func (k *Key) OpenJSON(kind string, data []byte) ([]byte, error) {
	sum, doc, ok := split(data)
	if !ok {
		return nil, ErrUnsealed
	}
	if !k.Check(kind, bytes.TrimSpace(doc), sum) {
		return nil, ErrBroken
	}
	return doc, nil
}

// ReadJSON reads the JSON record of kind at path and returns its content without the seal
// (OpenJSON). A record that fails its seal is an *EditedError naming path; a file that
// cannot be read is the error of os.ReadFile.
func (k *Key) ReadJSON(kind, path string) ([]byte, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	doc, err := k.OpenJSON(kind, data)
	if err != nil {
		return nil, Edited(path, err)
	}
	return doc, nil
}

// Strip returns a JSON record without its seal, unchecked: the readable copy for people.
// A record with no seal is returned as it is.
func Strip(data []byte) []byte {
	if _, doc, ok := split(data); ok {
		return doc
	}
	return data
}

// split cuts a record written by SealJSON into its seal and the sealed bytes.
func split(data []byte) (string, []byte, bool) {
	rest, ok := bytes.CutPrefix(data, []byte("{"+sealMember))
	if !ok || len(rest) < 64+2 || !bytes.HasPrefix(rest[64:], []byte("\",")) {
		return "", nil, false
	}
	sum := string(rest[:64])
	if _, err := hex.DecodeString(sum); err != nil {
		return "", nil, false
	}
	doc := append([]byte("{"), rest[66:]...)
	return sum, doc, true
}

// Trailer is the trailer that seals a landed commit.
const Trailer = "Orchestrator-Seal"

// trailerPrefix starts every trailer of the orchestrator's.
const trailerPrefix = "Orchestrator-"

// landingContent is what a landing's seal covers: the commit's tree and its
// Orchestrator- trailers other than the seal, in order.
func landingContent(message, tree string) []byte {
	var b strings.Builder
	b.WriteString("tree " + tree + "\n")
	for _, line := range strings.Split(message, "\n") {
		line = strings.TrimRight(line, "\r")
		if strings.HasPrefix(line, trailerPrefix) && !strings.HasPrefix(line, Trailer+":") {
			b.WriteString(line + "\n")
		}
	}
	return []byte(b.String())
}

// SealMessage returns a landing's commit message with its seal: an Orchestrator-Seal
// trailer over the message's other Orchestrator- trailers and tree, the tree the commit
// will have. message ends with its trailers.
func (k *Key) SealMessage(message, tree string) string {
	if !strings.HasSuffix(message, "\n") {
		message += "\n"
	}
	return message + Trailer + ": " + k.Sum(KindLanding, landingContent(message, tree)) + "\n"
}

// CheckMessage checks the seal of a commit's message whose tree is tree: ErrUnsealed
// when it has no Orchestrator-Seal trailer, ErrBroken when the seal does not match (a
// trailer or the tree changed, or the seal was made without the key).
func (k *Key) CheckMessage(message, tree string) error {
	sum := ""
	for _, line := range strings.Split(message, "\n") {
		if v, ok := strings.CutPrefix(strings.TrimRight(line, "\r"), Trailer+": "); ok {
			if sum != "" {
				return ErrBroken // two seals: not one the orchestrator wrote
			}
			sum = strings.TrimSpace(v)
		}
	}
	if sum == "" {
		return ErrUnsealed
	}
	if !k.Check(KindLanding, landingContent(message, tree), sum) {
		return ErrBroken
	}
	return nil
}
