// Package templates holds the files that `orchestrator init` writes into a new
// .orchestrator/ folder. It owns their text only; the queue package reads them.
package templates

import (
	"embed"
	"errors"
	"io/fs"
	"slices"
	"strings"
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

// The lines of config.yaml that Config rewrites.
const (
	agentLine  = "# agent: claude               # claude, codex, exec, replay, or a name under agents:\n"
	agentsLine = "# agents:\n#   my-agent: {command: [./scripts/agent.sh]}\n"
)

// ExecAgent is the agent Config names when neither claude nor codex is installed: an exec
// agent whose program, ./scripts/agent.sh, the person writes.
const ExecAgent = "my-agent"

// Config returns the config.yaml that init writes, given the agent programs found on this
// machine (among "claude" and "codex"): it names the first of them as the agent, or, when
// neither is found, an exec agent (ExecAgent) for the person to write. The rest of the file
// is the commented template.
func Config(found []string) ([]byte, error) {
	data, err := fs.ReadFile(files, "files/config.yaml")
	if err != nil {
		return nil, err
	}
	text := string(data)
	if !strings.Contains(text, agentLine) || !strings.Contains(text, agentsLine) {
		return nil, errors.New("config.yaml template: the agent lines are not where Config expects them")
	}
	var agent, agents string
	switch {
	case slices.Contains(found, "claude"):
		agent = "agent: claude                 # found on PATH by init; or codex, exec, replay, a name under agents:\n"
	case slices.Contains(found, "codex"):
		agent = "agent: codex                  # found on PATH by init (claude was not); or exec, replay, a name under agents:\n"
	default:
		agent = "agent: " + ExecAgent + "               # init found neither claude nor codex on PATH: an exec agent\n"
		agents = "agents:                       # the prompt on standard input; its output ends with a tdd-result block\n" +
			"  " + ExecAgent + ": {command: [./scripts/agent.sh]}\n"
	}
	text = strings.Replace(text, agentLine, agent, 1)
	if agents != "" {
		text = strings.Replace(text, agentsLine, agents, 1)
	}
	return []byte(text), nil
}
