package main

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/orchestrator/orchestrator/agents"
)

// Reviewer and judge (SPEC §11.2): when the orchestrator runs testagent as a reviewer or a
// judge (ORCHESTRATOR_ROLE), it plays that role whatever TESTAGENT_MODE says:
//
//	TESTAGENT_REVIEWER_NOTES, TESTAGENT_JUDGE_NOTES   the JSON the block's notes hold; a
//	    _<N> suffix gives the one for attempt N. In the judge's, @PRECHECKS@ stands for
//	    the pre-check lines of its prompt that name a finding (hard_coded, env_switch...),
//	    as a JSON string, so that a test sees the evidence reach the judge.
//	    A judge's block status follows its verdict.
//	TESTAGENT_REVIEW_BAD      "once": the first answer of a run has no valid block (the
//	    re-emit prompt gets a valid one); "always": neither has one
//	TESTAGENT_REVIEW_SH       shell run in ORCHESTRATOR_ROOT first (a cheat: change files)
//	TESTAGENT_REVIEW_WORK     a duration to work first
//	TESTAGENT_PROMPTLOG       a file each prompt is appended to, after a line
//	    "=== <role> <attempt>"
func reviewRole(role string) error {
	prompt, err := io.ReadAll(os.Stdin)
	if err != nil {
		return err
	}
	n, _ := strconv.Atoi(filepath.Base(filepath.Dir(os.Getenv("ORCHESTRATOR_ATTEMPT_DIR"))))
	if path := os.Getenv("TESTAGENT_PROMPTLOG"); path != "" {
		f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644)
		if err != nil {
			return err
		}
		fmt.Fprintf(f, "=== %s %d\n%s\n", role, n, prompt)
		f.Close()
	}
	if work, err := duration("TESTAGENT_REVIEW_WORK"); err == nil && work > 0 {
		time.Sleep(work)
	}
	if sh := os.Getenv("TESTAGENT_REVIEW_SH"); sh != "" {
		cmd := exec.Command("/bin/sh", "-c", sh)
		cmd.Dir = os.Getenv("ORCHESTRATOR_ROOT")
		cmd.Stdout, cmd.Stderr = os.Stdout, os.Stdout
		if err := cmd.Run(); err != nil {
			fmt.Println("the shell step failed:", err)
		}
	}
	reemit := strings.TrimSpace(string(prompt)) == "re-emit your last message with one valid tdd-result block"
	switch bad := os.Getenv("TESTAGENT_REVIEW_BAD"); {
	case bad == "always", bad == "once" && !reemit:
		fmt.Println("I looked at it and it seems fine to me.")
		return nil
	}
	key := "TESTAGENT_REVIEWER_NOTES"
	if role == agents.RoleJudge {
		key = "TESTAGENT_JUDGE_NOTES"
	}
	notes := os.Getenv(key + "_" + strconv.Itoa(n))
	if notes == "" {
		notes = os.Getenv(key)
	}
	if strings.Contains(notes, "@PRECHECKS@") {
		var found []string
		for _, line := range strings.Split(string(prompt), "\n") {
			for _, k := range []string{"hard_coded", "env_switch", "test_skipped", "test_deleted", "assertion_removed"} {
				if strings.Contains(line, ": "+k+": ") {
					found = append(found, strings.TrimSpace(line))
					break
				}
			}
		}
		q, _ := json.Marshal(strings.Join(found, " | "))
		notes = strings.ReplaceAll(notes, "@PRECHECKS@", strings.Trim(string(q), `"`))
	}
	status := agents.StatusOK
	if role == agents.RoleJudge && strings.Contains(notes, `"verdict": "fail"`) || strings.Contains(notes, `"verdict":"fail"`) {
		status = agents.StatusFailed
	}
	res := &agents.Result{Role: role, Status: status, Files: []string{}, Command: "go test ./...", OutputExcerpt: "ok", Notes: notes}
	if status == agents.StatusFailed {
		res.State = agents.StateFailure
	}
	fmt.Print("My review is below.\n\n" + res.Render())
	return nil
}
