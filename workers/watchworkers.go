package workers

import (
	"context"
	"encoding/json"

	"github.com/nats-io/nats.go/jetstream"
)

// WatchWorkers delivers every heartbeat a worker puts from now on (and the last of each
// worker listed now) until ctx ends, when the channel closes: the authority hears which
// worker took an attempt as soon as it starts it (a worker puts its heartbeat when a job
// starts or ends). A heartbeat is a worker's word: it says where an attempt runs, for
// people, and is evidence of nothing.
func (d *Dispatcher) WatchWorkers(ctx context.Context) (<-chan Heartbeat, error) {
	kv, err := d.js.KeyValue(ctx, workersBucket)
	if err != nil {
		return nil, err
	}
	w, err := kv.WatchAll(ctx)
	if err != nil {
		return nil, err
	}
	out := make(chan Heartbeat, 16)
	go func() {
		defer close(out)
		defer w.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case e, ok := <-w.Updates():
				if !ok {
					return
				}
				if e == nil || e.Operation() != jetstream.KeyValuePut {
					continue // the end of the initial values, or a worker that left
				}
				var hb Heartbeat
				if json.Unmarshal(e.Value(), &hb) != nil {
					continue
				}
				select {
				case out <- hb:
				case <-ctx.Done():
					return
				}
			}
		}
	}()
	return out, nil
}

// ParseAttemptID reads an attempt ID as AttemptID.String writes it ("TASK-001/3"), as a
// Heartbeat lists the attempts a worker runs.
func ParseAttemptID(s string) (AttemptID, bool) {
	for i := len(s) - 1; i >= 0; i-- {
		if s[i] == '/' {
			a, err := parseKey(s[:i] + "." + s[i+1:])
			return a, err == nil
		}
	}
	return AttemptID{}, false
}
