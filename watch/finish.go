package watch

import (
	"context"
	"fmt"
	"strings"
)

// finish takes an attempt whose agent has ended along the rest of its path. An attempt is
// one value, passed from stage to stage, each in its own file:
//
//   - run (run.go): the agent runs in its slot and sandbox; endRun ends what it left running;
//   - candidate (candidate.go): what the agent did, as git sees it, whatever it claims;
//   - pre-checks (precheck.go): its claim, and every end decided before its code runs;
//   - gate (judge.go): the candidate's tests, in the sandbox, on the head it would land on,
//     beside the loop in the merge queue (mergequeue.go), which keeps the landing order;
//   - review (review.go): the reviewer's and the judge's rulings, where config asks;
//   - landing (land.go): the verified candidate onto the integration branch;
//   - record (record.go): its record, its task's Status, its issue, the tasks it made ready.
func (r *runner) finish(ctx context.Context, a *attempt) error {
	end := a.timed("end_run")
	over, err := r.endRun(ctx, a)
	end()
	if over {
		return err
	}
	end = a.timed("candidate")
	candErr := r.makeCandidate(ctx, a)
	end()
	end = a.timed("pre_checks")
	res, log, gated := r.precheck(a, candErr)
	end()
	if gated {
		return r.enqueue(ctx, a, res, log)
	}
	_, err = r.afterGate(ctx, a, res, log)
	return err
}

// afterGate takes an attempt whose gate has decided (or that needed none) through its last
// stages: review, landing, record. It reports whether its candidate landed.
func (r *runner) afterGate(ctx context.Context, a *attempt, res result, log *strings.Builder) (landed bool, err error) {
	fmt.Fprintf(log, "decision: %s: %s\n", res.Outcome, res.Reason)
	if r.reviewing(a) && ctx.Err() == nil {
		end := a.timed("review")
		log.WriteString(r.review(ctx, a, &res))
		end()
	}
	if res.Outcome == "completed" {
		end := a.timed("landing")
		log.WriteString(r.landing(ctx, a, &res))
		end()
	}
	return res.Outcome == "completed" && res.Commit != "", r.conclude(ctx, a, res, log.String())
}
