package reconciler

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"testing"

	fleet "github.com/gitfleet/gitfleet/api/v1beta1"
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
	var errs, kinds []string
	c := &Controller{Hub: embedded.New(clk, nil), Clock: clk,
		Runs:       &passErrors{errs: []error{conflict, nil, conflict, fmt.Errorf("the hub is down")}},
		OnError:    func(controller string, err error) { errs = append(errs, controller+": "+err.Error()) },
		OnConflict: func(kind string) { kinds = append(kinds, kind) },
		Log:        slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug}))}
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
	if !slices.Equal(kinds, []string{ConflictBinding, ConflictBinding}) {
		t.Errorf("OnConflict heard %q, want the binding's Conflict twice", kinds)
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

// ConflictKind names the object of a Conflict as both hubs report it (the
// registry's resource, wrapped or not), in a bounded set of label values.
func TestConflictKindNamesTheObjectWhoseWriteLost(t *testing.T) {
	for _, tc := range []struct {
		err  error
		want string
	}{
		{hub.Conflict(fleet.KindClusterResourceBinding, hub.Key{Name: "b"}), ConflictBinding},
		{fmt.Errorf("marking: %w", hub.Conflict(fleet.KindResourceBinding, hub.Key{Namespace: "ns", Name: "b"})), ConflictBinding},
		{hub.Conflict(fleet.KindClusterStagedUpdateRun, hub.Key{Name: "r"}), ConflictUpdateRun},
		{hub.Conflict(fleet.KindStagedUpdateRun, hub.Key{Namespace: "ns", Name: "r"}), ConflictUpdateRun},
		{hub.Conflict(fleet.KindClusterApprovalRequest, hub.Key{Name: "a"}), ConflictApproval},
		{hub.Conflict(fleet.KindApprovalRequest, hub.Key{Namespace: "ns", Name: "a"}), ConflictApproval},
		{hub.Conflict(fleet.KindClusterResourcePlacement, hub.Key{Name: "p"}), ConflictOther},
		{errors.New("no API status"), ConflictOther},
	} {
		if got := ConflictKind(tc.err); got != tc.want {
			t.Errorf("ConflictKind(%v) = %q, want %q", tc.err, got, tc.want)
		}
		if !slices.Contains(ConflictKinds, tc.want) {
			t.Errorf("%q is not in ConflictKinds", tc.want)
		}
	}
}
