// Package testdiff compares the tests of test files before and after a change, one test
// function or method at a time, read by the language's own parser (SPEC §7.2): Go through
// go/ast, Python through Python's own ast module (python.py, run isolated, which reads the
// files as data and never imports them).
//
// Each test that existed before the change is classified as Unchanged; AddedTo (its old
// body survives, with only statements, table rows or parametrize rows added, and nothing
// added exits or skips early or writes what the old statements read); Moved (the same body
// as a test elsewhere, in the same file under another name or in another file); Deleted;
// Skipped (a skip or an early exit added, to it or around it); or Changed in any other way.
// A test whose helper (a function, method or table of its file that it names, a setUp or an
// autouse fixture of its class or module) changed in a way that is not an addition counts
// as Changed too.
//
// Both languages are read into one tree (tree.go): each node has a head (what must stay
// equal), kids (parts that may themselves grow) and sequences (statement lists, table
// rows) that may gain items. One comparison decides for both.
//
// The package decides nothing about a gate: package gate weighs the classes against the
// tests' results at the base (a Changed test that fails there states new behaviour) and
// refuses or allows.
package testdiff
