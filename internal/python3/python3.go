// Package python3 finds the Python interpreter that the orchestrator's own scripts run
// with (reading tests, harness and code with Python's ast; making mutants). They read
// source as data and need nothing beyond the standard library.
package python3

import (
	"fmt"
	"os"
	"os/exec"
)

// System is the system's interpreter, preferred to the first python3 on PATH (a pyenv
// shim, a virtual environment's): its standard library is the distribution's.
const System = "/usr/bin/python3"

// Path returns System where it is, else the python3 on PATH, else an error that says
// neither is there.
func Path() (string, error) {
	if _, err := os.Stat(System); err == nil {
		return System, nil
	}
	p, err := exec.LookPath("python3")
	if err != nil {
		return "", fmt.Errorf("no python3: %w", err)
	}
	return p, nil
}
