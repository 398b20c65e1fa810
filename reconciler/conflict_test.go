package reconciler

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"strings"
	"testing"

	"github.com/gitfleet/gitfleet/internal/clock"
	"github.com/gitfleet/gitfleet/reconciler/hub"
	"github.com/gitfleet/gitfleet/reconciler/hub/embedded"
	"github.com/gitfleet/gitfleet/reconciler/updaterun"
)

// passErrors is a RunReconciler whose passes fail with errs, in turn.
type passErrors struct{ errs []error }

func (p *passErrors) Reconcile(context.Context, hub.Key) (updaterun.Result, error) {
	err := p.errs[0]
	p.errs = p.errs[1:]
	return updaterun.Result{}, err
}

// A run pass that loses a write to a Conflict (another writer came first,
// as RolloutStarted and status writes do on a busy Kubernetes hub) is
// retried: logged at debug, counted, not an error; any other failure still
// is one.
func TestARunPassLosingAWriteToAConflictIsRetriedNotAnError(t *testing.T) {
	clk := clock.NewFake(epoch)
	run := hub.Key{Name: "run"}
	conflict := fmt.Errorf("marking the rollout of binding b started: %w", hub.Conflict("ClusterResourceBinding", hub.Key{Name: "b"}))
	var logs bytes.Buffer
	var errs []string
	c := &Controller{Hub: embedded.New(clk, nil), Clock: clk,
		Runs:    &passErrors{errs: []error{conflict, nil, conflict, fmt.Errorf("the hub is down")}},
		OnError: func(controller string, err error) { errs = append(errs, controller+": "+err.Error()) },
		Log:     slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug}))}
	pass := func() {
		t.Helper()
		c.EnqueueRun(run)
		c.Drain(context.Background())
	}

	pass()
	pass()
	pass()
	if len(errs) != 0 || c.Conflicts() != 2 {
		t.Errorf("after conflict, success, conflict: errors %q and %d conflicts, want none and 2", errs, c.Conflicts())
	}
	for _, line := range strings.Split(strings.TrimSpace(logs.String()), "\n") {
		if !strings.Contains(line, "level=DEBUG") {
			t.Errorf("logged above debug: %s", line)
		}
	}
	if n := strings.Count(logs.String(), "lost a write to a conflict"); n != 2 {
		t.Errorf("%d debug lines for 2 conflicts:\n%s", n, logs.String())
	}

	logs.Reset()
	clk.Step()
	pass()
	if len(errs) != 1 || !strings.Contains(logs.String(), "level=INFO msg=\"run pass failed, retrying\"") {
		t.Errorf("another failure: errors %q, log\n%s\nwant it counted and logged as one", errs, logs.String())
	}
}
