// Package sandbox owns the bubblewrap jail that every command running candidate code runs
// in (SPEC §7.6, §15.2): the gate's test runs, the baseline's, the spot check's and the
// mutation runs. A [Profile] says what the command may see and write; [Profile.Wrap] turns
// it into a bwrap command line; [Available] says whether bubblewrap works here.
//
// The package decides nothing about what a command means or when it runs (packages gate,
// testrun, watch); it knows only how to confine one.
package sandbox
