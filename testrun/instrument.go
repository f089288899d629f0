package testrun

import (
	"fmt"
	"path/filepath"
	"sort"
	"strings"
)

// An invocation is a test command line rewritten to report structured output.
type invocation struct {
	runner  Runner
	command string   // the command line as run
	reports []string // files the runner writes its report to (vitest, jest)
	verbose bool     // the command asked for every test's output (go test -v)
	// stream: the command reports through the pipe of descriptor 3 (pytest, with the
	// orchestrator's reporter); sessions is how many pytest commands the line has.
	stream   bool
	sessions int
}

// instrument adds to every simple command of the line that runs the runner the flags that
// make it report structured output: -json for go test; for pytest, the orchestrator's
// reporter (-p, py's module, which writes to a pipe: reporterSource), the project's
// configured plugins (-p each, py's plugins), -rA and --continue-on-collection-errors (one
// broken test file must not hide the rest of the suite from a baseline); the JSON reporter
// next to the default one for vitest; --json for jest; --no-fail-fast for cargo test, whose
// human output is read as it is (with --format=pretty when -q would make it terse). py nil
// stands for the default reporter's name and no configured plugin.
//
// The JavaScript runners write their report to a path in tmp, which Run makes a named pipe
// that it reads as the run goes (reportpipe.go): they run through npx, npm or pnpm, which
// start them with only the standard descriptors, so a pipe of descriptor 3 does not reach
// them.
func instrument(command string, r Runner, tmp string, py *pytestSetup) invocation {
	inv := invocation{runner: r, command: command}
	if r == Exit {
		return inv
	}
	type insert struct {
		at   int
		text string
	}
	var ins []insert
	for _, s := range findSites(lex(command)) {
		if s.runner != r {
			continue
		}
		after := s.words[s.at].end
		switch r {
		case Go:
			inv.verbose = inv.verbose || s.has("-v", "-test.v")
			if !s.has("-json") {
				ins = append(ins, insert{after, " -json"})
			}
		case Pytest:
			inv.stream = true
			inv.sessions++
			module := defaultReporter
			var text strings.Builder
			if py != nil {
				module = py.module
			}
			text.WriteString(" -p " + module)
			if py != nil && py.plugins != nil {
				for _, name := range py.plugins(s) {
					text.WriteString(" -p " + quote(name))
				}
			}
			text.WriteString(" -rA --continue-on-collection-errors")
			ins = append(ins, insert{after, text.String()})
		case Vitest:
			f := filepath.Join(tmp, fmt.Sprintf("vitest-%d.json", len(inv.reports)+1))
			inv.reports = append(inv.reports, f)
			text := " --reporter=json " + quote("--outputFile.json="+f)
			if !s.has("--reporter") {
				text = " --reporter=default" + text
			}
			ins = append(ins, insert{after, text})
		case Jest:
			f := filepath.Join(tmp, fmt.Sprintf("jest-%d.json", len(inv.reports)+1))
			inv.reports = append(inv.reports, f)
			ins = append(ins, insert{after, " --json " + quote("--outputFile="+f)})
		case Cargo:
			dash := -1
			for i, w := range s.words[s.at+1:] {
				if w.text == "--" {
					dash = s.at + 1 + i
					break
				}
			}
			cargoEnd := len(s.words)
			if dash >= 0 {
				cargoEnd = dash
			}
			if !hasFlag(s.words[s.at+1:cargoEnd], "--no-fail-fast") {
				ins = append(ins, insert{after, " --no-fail-fast"})
			}
			if s.has("-q", "--quiet") && !s.has("--format") {
				if dash >= 0 {
					ins = append(ins, insert{s.words[dash].end, " --format=pretty"})
				} else {
					ins = append(ins, insert{s.words[len(s.words)-1].end, " -- --format=pretty"})
				}
			}
		}
	}
	// Insert from the end, so that earlier offsets stay right; equal offsets keep their order.
	sort.SliceStable(ins, func(i, j int) bool { return ins[i].at > ins[j].at })
	out := command
	for i := 0; i < len(ins); {
		j := i
		var text strings.Builder
		for j < len(ins) && ins[j].at == ins[i].at {
			text.WriteString(ins[j].text)
			j++
		}
		out = out[:ins[i].at] + text.String() + out[ins[i].at:]
		i = j
	}
	inv.command = out
	return inv
}
