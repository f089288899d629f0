// Package templates holds the files that `orchestrator init` writes into a new
// .orchestrator/ folder. It owns their text only; the queue package reads them.
package templates

import (
	"embed"
	"io/fs"
)

//go:embed files
var files embed.FS

// Files returns the init files, named by their path inside .orchestrator/.
func Files() fs.FS {
	sub, err := fs.Sub(files, "files")
	if err != nil {
		panic(err) // the embedded tree is fixed at build time
	}
	return sub
}

// Names lists the init files in the order init writes them.
var Names = []string{"task_queue.md", "issue_queue.md", "session_state.md", "config.yaml", ".gitignore"}

// Source returns the embedded file that init writes as name. (A file named .gitignore cannot
// be embedded under its own name, so it is stored as gitignore.)
func Source(name string) string {
	if name == ".gitignore" {
		return "gitignore"
	}
	return name
}
