// Package prompts owns the prompt each agent receives: one embedded template per role
// (test writer, test verifier, implementer, refactorer, QA, reviewer, judge), a person's
// override of it in .orchestrator/prompts/, and [Render], which turns a task into the exact
// text sent to the agent on standard input (SPEC §10.2). `orchestrator prompt ID` prints
// Render's output unchanged.
//
// Render enforces the isolation rule of §10.2 for what it is given: the prompt is built only
// from the task record (ID, title, fields, body), the files the caller asks to include, the raw
// output of the last failed gate, the test command and the attempt number. A file is included
// only when it is on the caller's allowlist and stays inside the repository root (no absolute
// paths, no `..`, no symlink leading out); anything else is refused with a [*NotAllowedError].
// Nothing is sorted, summarised or explained: files appear in the order given and the gate
// output verbatim, so the same input always gives the same bytes.
//
// The package does not decide what goes on the allowlist (that is the previous phase's
// hand-off manifest, written by the gates), does not know which files are tests, does not read
// the queue or the config, and does not start agents or parse their tdd-result blocks (the
// agents package does). It describes the completion marker and the tdd-result contract
// (§10.3) to the agent; it does not check them.
//
// # Templates
//
// Templates use [text/template] and see a [Data] value. The role templates share the blocks
// defined in templates/common.tmpl: "context" (the task, its files, the test command and the
// last failure) and "finish" (the marker and the result block). An override file may call
// them, redefine them with {{define}}, or do without them.
package prompts
