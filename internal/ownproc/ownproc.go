// Package ownproc keeps the set of the orchestrator's own child processes that run beside
// its loop: the git of a candidate's patch, of the workers' dispatcher taking an outcome or
// bundling a base. The reaper of what agents leave behind (agents.ReapOrphans) ends every
// child it does not know; without this set it took such a git process, started by another
// goroutine a moment before, for an agent's orphan, killed it and reaped its status from
// under the goroutine that waited for it.
//
// A process is the orchestrator's own from its start (Start) until it is reaped (Wait):
// a zombie that its Wait has not reaped yet is still its own. Scan holds every Start off
// while a reaper looks, so no process starts between the reaper's reading of the set and
// its reading of the children.
package ownproc

import (
	"os/exec"
	"sync"
)

var (
	// starting is held for reading around each start, for writing by Scan.
	starting sync.RWMutex
	mu       sync.Mutex
	live     = map[int]int{} // PID → processes of ours with it (a PID is reused only once reaped)
)

// Start starts cmd as the orchestrator's own process; Wait must reap it.
func Start(cmd *exec.Cmd) error {
	starting.RLock()
	defer starting.RUnlock()
	if err := cmd.Start(); err != nil {
		return err
	}
	mu.Lock()
	live[cmd.Process.Pid]++
	mu.Unlock()
	return nil
}

// Wait waits for cmd, which Start started, and forgets it once it is reaped.
func Wait(cmd *exec.Cmd) error {
	err := cmd.Wait()
	pid := cmd.Process.Pid
	mu.Lock()
	if live[pid]--; live[pid] <= 0 {
		delete(live, pid)
	}
	mu.Unlock()
	return err
}

// Run is cmd.Run for a process of the orchestrator's own.
func Run(cmd *exec.Cmd) error {
	if err := Start(cmd); err != nil {
		return err
	}
	return Wait(cmd)
}

// Scan calls f with no process of ours starting meanwhile; own reports whether pid is a
// process of ours that Start started and Wait has not reaped. f must start no process
// through Start.
func Scan(f func(own func(pid int) bool)) {
	starting.Lock()
	defer starting.Unlock()
	f(func(pid int) bool {
		mu.Lock()
		defer mu.Unlock()
		return live[pid] > 0
	})
}
