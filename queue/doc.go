// Package queue owns the markdown queue format: finding records, fields and values in
// .orchestrator/task_queue.md and issue_queue.md (SPEC §3), editing them one cell at a time
// (§3.5), and saving the result safely under the lock (§4.2, §4.3).
//
// Records and tables are found by CommonMark structure as goldmark (with its GFM table
// extension) defines it. A hand-written line scanner handles the shapes queue files use, fast;
// on anything it is not sure of, it hands the whole file to goldmark instead. A fuzz test
// checks that the two agree.
//
// The package does not decide what to do with tasks (scheduling, gates, agents); it only
// reads and writes them faithfully. Rules over the parsed queue (validation, the ready set,
// the coverage matrix) live here too because they are pure functions of the files, and so
// does reading the test plan (projectspec/test-plan-output.json) that the coverage rules
// compare the queue with.
package queue
