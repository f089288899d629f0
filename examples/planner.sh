#!/bin/sh
# A scripted planner for the demo of `orchestrator plan` (examples/plan-demo.sh): it plays
# what a model would do, with no model. Its first output forgets UNIT-002; given the check's
# findings, its second maps every test of the plan. A real planner is `agent: claude`.
set -e
round=$(basename "$ORCHESTRATOR_ATTEMPT_DIR")
cat > /dev/null # the prompt
ids="UNIT-001, UNIT-002"
[ "$round" = 1 ] && ids="UNIT-001"
cat > "$ORCHESTRATOR_PLAN_FILE" <<TASKS
### TASK-T01: Tests for Add and Multiply

| Field | Value |
|-------|-------|
| Status | pending |
| Category | testing |
| Mode | write |
| Test IDs | $ids |
| Test File | calc_test.go |

**Objective:** Write failing tests for \`Add\` and \`Multiply\` as the test plan describes.

### TASK-001: Implement Add and Multiply

| Field | Value |
|-------|-------|
| Status | pending |
| Category | backend |
| Depends On | TASK-T01 |

**Objective:** Implement \`Add\` and \`Multiply\` so that the tests of TASK-T01 pass.

### TASK-V01: Verify the arithmetic tests

| Field | Value |
|-------|-------|
| Status | pending |
| Category | test_verification |
| Depends On | TASK-T01, TASK-001 |

**Objective:** Run the tests and report each failure.
TASKS
cat <<RESULT
Three tasks: the tests, the code, the verification.

\`\`\`tdd-result
role: planner
status: ok
files:
  - $ORCHESTRATOR_PLAN_FILE
command: none
output_excerpt: |
  3 tasks covering $ids
\`\`\`
RESULT
