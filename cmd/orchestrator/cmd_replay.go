package main

import (
	"github.com/orchestrator/orchestrator/agents"
	"github.com/spf13/cobra"
)

// newReplayCommand is the hidden entry point of the replay agent: the orchestrator runs
// itself as a scripted agent (SPEC §10.1), so that the whole loop runs with no model.
func newReplayCommand(g *globalOptions) *cobra.Command {
	return &cobra.Command{
		Use:                "__replay",
		Hidden:             true,
		DisableFlagParsing: true,
		RunE: func(c *cobra.Command, args []string) error {
			if code := agents.ReplayMain(args, g.Stdin, g.Stdout); code != 0 {
				return &exitError{code: code}
			}
			return nil
		},
	}
}
