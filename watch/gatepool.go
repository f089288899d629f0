package watch

import (
	"context"
	"fmt"
	"runtime"

	"github.com/orchestrator/orchestrator/worktree"
)

// A gatePool holds the gate's checkouts: one per gate that may run at once (config
// gate_jobs). The merge queue's gates take one each for their run beside the loop; the
// loop takes one for what it judges or reads itself (loopGate) and gives it back at the
// end of each of its steps (dropGate). A slot is made the first time it is taken.
type gatePool struct {
	// free holds the slots no gate uses; nil stands for one not made yet.
	free chan *worktree.Slot
	made int
}

func newGatePool(n int) *gatePool {
	p := &gatePool{free: make(chan *worktree.Slot, n)}
	for range n {
		p.free <- nil
	}
	return p
}

// gateJobs is how many gates run at once: config gate_jobs, else as many as jobs, up to
// half the machine's cores. A test run already keeps several cores busy (go test builds
// and runs packages in parallel), and two gates at once build the same packages twice
// where one after the other reuse them: on 2 cores, one gate at a time lands eight tasks
// faster than two (BenchmarkMergeQueue).
func (r *runner) gateJobs() int {
	if n := r.o.Config.GateJobs; n > 0 {
		return n
	}
	return max(1, min(r.o.Jobs, runtime.NumCPU()/2))
}

// make returns slot s, or a new slot of the pool when s is nil. Only the loop makes
// slots.
func (r *runner) makeGate(ctx context.Context, s *worktree.Slot) (*worktree.Slot, error) {
	if s != nil {
		return s, nil
	}
	p := r.gates
	name := "gate"
	if p.made > 0 {
		name = fmt.Sprintf("gate-%d", p.made+1)
	}
	s, err := r.repo.Slot(ctx, name)
	if err != nil {
		p.free <- nil
		return nil, err
	}
	p.made++
	return s, nil
}

// tryGate takes a free slot for a gate of the merge queue, or returns false when every
// slot is in use.
func (r *runner) tryGate(ctx context.Context) (*worktree.Slot, bool, error) {
	select {
	case s := <-r.gates.free:
		s, err := r.makeGate(ctx, s)
		return s, err == nil, err
	default:
		return nil, false, nil
	}
}

// putGate gives a slot back to the pool.
func (r *runner) putGate(s *worktree.Slot) { r.gates.free <- s }

// loopGate returns the loop's gate slot for this step of the loop, waiting for one of the
// merge queue's gates to end when every slot is in use.
func (r *runner) loopGate(ctx context.Context) (*worktree.Slot, error) {
	if r.gate != nil {
		return r.gate, nil
	}
	var s *worktree.Slot
	select {
	case s = <-r.gates.free:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	s, err := r.makeGate(ctx, s)
	if err != nil {
		return nil, err
	}
	r.gate = s
	return s, nil
}

// dropGate gives the loop's gate slot back to the pool, at the end of a step of the loop.
func (r *runner) dropGate() {
	if r.gate != nil {
		r.putGate(r.gate)
		r.gate = nil
	}
}
