// Package seal keeps the orchestrator's evidence honest (SPEC §15.2 item 4): every record
// the gate, `status` and crash recovery read (verified marks, RED hand-offs, the baseline,
// attempt records, the trailers of a landing) carries an HMAC-SHA256 of its content, made
// with a key that only the person's user can read and that no sandbox shows.
//
// The key is 32 random bytes in $XDG_CONFIG_HOME/orchestrator/key (else the user's
// configuration folder, ~/.config/orchestrator/key), made on first use with mode 0600 in a
// folder of mode 0700. A key file that others may read is refused: whoever reads it can
// seal anything.
//
// Each kind of record has its own domain string, so that a seal made for one kind never
// verifies another. A JSON record carries its seal as a first member, "seal", over the
// record's bytes without it ([Key.SealJSON], [Key.OpenJSON]); a commit carries it as an
// Orchestrator-Seal trailer over its other Orchestrator- trailers and its tree
// ([Key.SealMessage], [Key.CheckMessage]). A record with no seal, or whose seal does not
// match, is not evidence: the reader ignores it, and says so with an [EditedError] naming it.
//
// The package seals and checks bytes; which records are evidence, where they live and what
// is done with one that fails is the business of the packages that keep them (worktree,
// gate, watch).
package seal
