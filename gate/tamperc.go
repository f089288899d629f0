package gate

import (
	"go/ast"
	"go/token"
	"path"
	"strconv"
	"strings"

	"github.com/orchestrator/orchestrator/internal/lazyre"
)

// C and assembly, which a Go package compiles in (cgo, .s files, .syso objects): the Go
// reading sees a cgo preamble only as a comment, yet its code runs in the test binary. A
// C constructor runs before the Go runtime starts, and C code may fork the test binary and
// filter its report, or put a pipe on its standard output, out of the Go reading's sight.
// The C reading is by tokens, not a proof (a macro can build a name); what honest cgo code
// of a task does (call a library, convert values) uses none of these.

// cExts are the endings of the C, C++, Objective-C and assembly files go build compiles
// into a package.
var cExts = map[string]bool{".c": true, ".h": true, ".cc": true, ".cpp": true, ".cxx": true, ".hh": true,
	".hpp": true, ".hxx": true, ".m": true, ".mm": true, ".s": true, ".S": true, ".sx": true}

// cLoadRE finds, in C, what runs code when the binary loads: a constructor or destructor
// attribute (not the words alone: a struct's destructor callback is everyday C), an
// initialization section, the init pragma.
var cLoadRE = lazyre.New(`__attribute__\s*\(\([^;{]*?\b(?:__)?(?:constructor|destructor)(?:__)?\b|\.(?:init_array|preinit_array|fini_array|ctors|dtors)\b|#\s*pragma\s+init\b`)

// cProcRE finds, in C, what starts or replaces a process, or puts another file on a
// descriptor: what a relay of the test binary's report needs.
var cProcRE = lazyre.New(`\b(?:fork|vfork|clone|clone3|execve?|execvp|execvpe|execl|execlp|execle|fexecve|posix_spawnp?|popen|system|dup|dup2|dup3|freopen|ptrace)\s*\(|/proc/self/`)

// asmSyscallRE finds a system call made from assembly.
var asmSyscallRE = lazyre.New(`(?m)^\s*(?:SYSCALL|SVC|INT\s+\$0x80|syscall|svc|int\s+\$0x80)\b`)

// cReach returns where C or assembly source src (of file name, its lines counted from
// line) runs code as the binary loads or starts and redirects processes.
func cReach(name string, src string, line int) []Tampering {
	var out []Tampering
	add := func(at int, what string) {
		out = append(out, Tampering{File: name, Line: line + strings.Count(src[:at], "\n"), What: what})
	}
	text := cStripComments(src)
	if ext := path.Ext(name); ext == ".s" || ext == ".S" || ext == ".sx" {
		if m := asmSyscallRE().FindStringIndex(text); m != nil {
			add(m[0], "makes a system call from assembly, out of the Go reading's sight")
		}
		return out
	}
	if m := cLoadRE().FindStringIndex(text); m != nil {
		add(m[0], "C code that runs as the binary loads ("+loadWhat(text[m[0]:m[1]])+"), before the Go runtime and the tests, out of the Go reading's sight")
	}
	if m := cProcRE().FindStringIndex(text); m != nil {
		add(m[0], "C code that starts a process or redirects a descriptor ("+strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(text[m[0]:m[1]]), "("))+"), which can run the test binary under a filter of its report")
	}
	return out
}

// loadWhat names what cLoadRE found: the attribute's word or the section.
func loadWhat(found string) string {
	for _, w := range []string{"constructor", "destructor"} {
		if strings.Contains(found, w) {
			return w
		}
	}
	return strings.TrimSpace(found)
}

// cStripComments blanks the comments of C source, keeping every byte's position and
// every line break.
func cStripComments(src string) string {
	b := []byte(src)
	for i := 0; i < len(b); i++ {
		switch {
		case b[i] == '/' && i+1 < len(b) && b[i+1] == '/':
			for ; i < len(b) && b[i] != '\n'; i++ {
				b[i] = ' '
			}
		case b[i] == '/' && i+1 < len(b) && b[i+1] == '*':
			for ; i < len(b) && !(b[i] == '*' && i+1 < len(b) && b[i+1] == '/'); i++ {
				if b[i] != '\n' {
					b[i] = ' '
				}
			}
			if i+1 < len(b) {
				b[i], b[i+1] = ' ', ' '
				i++
			}
		}
	}
	return string(b)
}

// cgoPreambles adds the C readings of the file's cgo preamble: the comment above its
// import "C".
func (g *goFile) cgoPreambles() {
	for _, d := range g.file.Decls {
		gd, ok := d.(*ast.GenDecl)
		if !ok || gd.Tok != token.IMPORT {
			continue
		}
		for _, s := range gd.Specs {
			is := s.(*ast.ImportSpec)
			if p, _ := strconv.Unquote(is.Path.Value); p != "C" {
				continue
			}
			doc := is.Doc
			if doc == nil && len(gd.Specs) == 1 {
				doc = gd.Doc
			}
			if doc == nil {
				continue
			}
			var text strings.Builder
			for _, c := range doc.List {
				t := c.Text
				switch {
				case strings.HasPrefix(t, "//"):
					t = t[2:]
				case strings.HasPrefix(t, "/*"):
					t = strings.TrimSuffix(t[2:], "*/")
				}
				text.WriteString(t + "\n")
			}
			for _, t := range cReach(g.name, text.String(), g.fset.Position(doc.Pos()).Line) {
				if k := t.String(); !g.seen[k] {
					g.seen[k] = true
					g.out = append(g.out, t)
				}
			}
		}
	}
}

// sysoLinked reports whether the object file p (a .syso) is linked into a Linux binary:
// its name does not confine it to another system.
func sysoLinked(p string) bool {
	base := strings.TrimSuffix(path.Base(p), ".syso")
	for _, goos := range []string{"windows", "darwin", "freebsd", "netbsd", "openbsd", "plan9", "solaris", "illumos", "aix", "dragonfly", "ios", "android", "js", "wasip1"} {
		if strings.HasSuffix(base, "_"+goos) || strings.Contains(base, "_"+goos+"_") {
			return false
		}
	}
	return true
}

// Rust, read by tokens like C: a static in an initialization section (#[link_section =
// ".init_array"]) or the ctor crate's attributes run before main; the libc calls that fork
// or redirect a descriptor; a program that runs its own executable again and reads what
// the child reports (the test binary's report, rewritten on its way out); and C a build
// script generates with a constructor in it.

// rsLoadRE finds Rust that runs as the binary loads.
var rsLoadRE = lazyre.New(`link_section\s*=\s*"\.(?:init_array|preinit_array|fini_array|ctors|dtors)|#\[\s*(?:ctor::)?(?:ctor|dtor)\b`)

// rsProcRE finds the libc calls (not methods: x.clone() is everyday Rust) that fork or
// put another file on a descriptor.
var rsProcRE = lazyre.New(`(?:^|[^.\w:])(?:libc::)?(?:fork|vfork|dup2|dup3|execv|execvp|execve|execvpe|posix_spawnp?|freopen)\s*\(`)

// rsSelfRE finds where Rust names its own executable.
var rsSelfRE = lazyre.New(`current_exe\s*\(|/proc/self/exe`)

// rsCommandRE finds where Rust starts a process, and rsCaptureRE where it reads a
// process's output.
var (
	rsCommandRE = lazyre.New(`Command::new\s*\(`)
	rsCaptureRE = lazyre.New(`\.output\s*\(\s*\)|Stdio::piped\s*\(`)
)

// rsReach returns where Rust source src of file name runs code as the binary loads,
// redirects descriptors or starts processes the way a relay of the test binary does.
func rsReach(name, src string) []Tampering {
	var out []Tampering
	text := cStripComments(src)
	add := func(at int, what string) {
		out = append(out, Tampering{File: name, Line: 1 + strings.Count(text[:at], "\n"), What: what})
	}
	if m := rsLoadRE().FindStringIndex(text); m != nil {
		what := "#[" + strings.TrimLeft(text[m[0]:m[1]], "#[ \t") + "]"
		if i := strings.Index(text[m[0]:m[1]], `"`); i >= 0 {
			what = "a static in " + text[m[0]+i+1:m[1]]
		}
		add(m[0], "Rust that runs as the binary loads ("+what+"), before main and the tests")
	}
	if m := cLoadRE().FindStringIndex(text); m != nil {
		add(m[0], "C with a "+loadWhat(text[m[0]:m[1]])+" in Rust source (generated and linked in, it runs as the binary loads)")
	}
	if m := rsProcRE().FindStringIndex(text); m != nil {
		call := strings.TrimLeft(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(text[m[0]:m[1]]), "(")), "=;,{}()[] \t\n!&|")
		add(m[0]+strings.Index(text[m[0]:m[1]], call), "calls "+call+", which starts a process or redirects a descriptor (a relay of the test binary's report)")
	}
	if rsSelfRE().MatchString(text) && rsCaptureRE().MatchString(text) {
		if m := rsCommandRE().FindStringIndex(text); m != nil {
			add(m[0], "runs its own executable again and reads what it reports (a test binary's report, rewritten on its way out)")
		}
	}
	return out
}
