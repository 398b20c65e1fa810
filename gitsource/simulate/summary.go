package simulate

import (
	"context"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"

	"k8s.io/apimachinery/pkg/api/meta"

	fleet "github.com/gitfleet/gitfleet/api/v1beta1"
	"github.com/gitfleet/gitfleet/reconciler/runview"
)

// WriteSummary prints one line per run: its phase and what it waits for.
func WriteSummary(ctx context.Context, w io.Writer, res *Result) error {
	runs, err := res.Hub.ListUpdateRuns(ctx)
	if err != nil {
		return err
	}
	fmt.Fprintf(w, "Summary after %s of virtual time (%d commit(s) replayed):\n", formatOffset(res.Elapsed), res.Commits)
	for _, u := range res.Unrendered {
		fmt.Fprintf(w, "  commit %s does not render (skipped; the hub keeps the last good commit's objects): %v\n", u.Commit.String()[:7], u.Err)
	}
	if len(res.Unrendered) == 0 {
		for _, e := range res.ManifestErrors {
			fmt.Fprintf(w, "  manifest error: %s\n", e.Error())
		}
	}
	if len(runs) == 0 {
		fmt.Fprintln(w, "  no update runs in the repository")
		return nil
	}
	tw := tabwriter.NewWriter(w, 0, 8, 3, ' ', 0)
	fmt.Fprintln(tw, "  RUN\tPHASE\tDETAIL")
	for _, r := range runs {
		fmt.Fprintf(tw, "  %s\t%s\t%s\n", nameOf(nil, r), r.Phase(), Detail(r))
	}
	return tw.Flush()
}

// Detail says where a run is, in words a person can act on.
func Detail(r *fleet.UpdateRun) string {
	conds := r.Status.Conditions
	switch r.Phase() {
	case fleet.PhaseInitFailed:
		return meta.FindStatusCondition(conds, fleet.StagedUpdateRunConditionInitialized).Message
	case fleet.PhaseFailed:
		return meta.FindStatusCondition(conds, fleet.StagedUpdateRunConditionSucceeded).Message
	case fleet.PhaseInitialized:
		return "state is Initialize: set spec.state to Run to start"
	case fleet.PhaseSucceeded:
		but := notUpdated(r)
		if c := meta.FindStatusCondition(conds, fleet.StagedUpdateRunConditionSucceeded); c.Reason == fleet.UpdateRunPartiallySucceededReason {
			if but != "" {
				return fmt.Sprintf("resource snapshot %s on every cluster but the failed ones (%s); %s", r.Status.ResourceSnapshotIndexUsed, c.Message, but)
			}
			return fmt.Sprintf("resource snapshot %s on every cluster but the failed ones (%s)", r.Status.ResourceSnapshotIndexUsed, c.Message)
		}
		if but != "" {
			return fmt.Sprintf("resource snapshot %s on every cluster of the run; %s", r.Status.ResourceSnapshotIndexUsed, but)
		}
		return fmt.Sprintf("resource snapshot %s on every cluster", r.Status.ResourceSnapshotIndexUsed)
	case fleet.PhaseWaiting, fleet.PhaseStopped, fleet.PhaseStuck, fleet.PhaseStopping:
		v := runview.Of(r)
		if v.Waiting.For == runview.WaitApproval {
			return "waiting for approval: " + strings.Join(v.Waiting.Approvals, ", ") + " (gitfleet approve NAME)"
		}
		msg := meta.FindStatusCondition(conds, fleet.StagedUpdateRunConditionProgressing).Message
		if pending := v.PendingNames(); len(pending) > 0 {
			// Stopped: an approval given now is taken once it runs again.
			msg += "; approval pending: " + strings.Join(pending, ", ")
		}
		return msg
	}
	if p := meta.FindStatusCondition(conds, fleet.StagedUpdateRunConditionProgressing); p != nil {
		return p.Message
	}
	return ""
}
