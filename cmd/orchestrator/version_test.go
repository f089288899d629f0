package main

import (
	"runtime/debug"
	"testing"
)

func TestVersionText(t *testing.T) {
	rev := "9b350904af08a76f892bff333d9387fddd5ab611"
	tests := []struct {
		name string
		info *debug.BuildInfo
		ok   bool
		want string
	}{
		{"no build info", nil, false, "orchestrator dev (commit unknown)\n"},
		{"no vcs", &debug.BuildInfo{}, true, "orchestrator dev (commit unknown)\n"},
		{"clean", &debug.BuildInfo{Settings: []debug.BuildSetting{{Key: "vcs.revision", Value: rev}, {Key: "vcs.modified", Value: "false"}}}, true,
			"orchestrator dev (commit " + rev + ")\n"},
		{"modified", &debug.BuildInfo{Settings: []debug.BuildSetting{{Key: "vcs.revision", Value: rev}, {Key: "vcs.modified", Value: "true"}}}, true,
			"orchestrator dev (commit " + rev + ", modified)\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := versionText(tt.info, tt.ok); got != tt.want {
				t.Errorf("got %q, want %q", got, tt.want)
			}
		})
	}
}
