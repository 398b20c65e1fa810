package simulate

import (
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	fleet "github.com/gitfleet/gitfleet/api/v1beta1"
	"github.com/gitfleet/gitfleet/reconciler/runview"
)

// Event is one line of the timeline.
type Event struct {
	// At is the virtual offset from the start of the simulation.
	At      time.Duration
	Run     string
	Message string
}

// diffRun derives what happened to a run during one pass by comparing its
// status before and after. It reads only conditions, so it tells the story
// of any run, whichever reconciler moved it.
func diffRun(before, after *fleet.UpdateRun) []string {
	if after == nil {
		if before != nil {
			return []string{"deleted"}
		}
		return nil
	}
	var b fleet.UpdateRunStatus
	if before != nil {
		b = before.Status
	}
	a := after.Status
	var out []string
	if changed(b.Conditions, a.Conditions, fleet.StagedUpdateRunConditionInitialized) {
		c := meta.FindStatusCondition(a.Conditions, fleet.StagedUpdateRunConditionInitialized)
		if c.Status == metav1.ConditionTrue {
			out = append(out, fmt.Sprintf("initialized: placement %s, resource snapshot %s, policy snapshot %s, %s",
				after.Spec.PlacementName, a.ResourceSnapshotIndexUsed, a.PolicySnapshotIndexUsed, planSummary(a)))
		} else {
			out = append(out, "initialization failed: "+c.Message)
		}
	}
	for i := range a.StagesStatus {
		var bs *fleet.StageUpdatingStatus
		if i < len(b.StagesStatus) {
			bs = &b.StagesStatus[i]
		}
		out = append(out, diffStage(bs, &a.StagesStatus[i], false)...)
	}
	if a.DeletionStageStatus != nil {
		out = append(out, diffStage(b.DeletionStageStatus, a.DeletionStageStatus, true)...)
	}
	if changed(b.Conditions, a.Conditions, fleet.StagedUpdateRunConditionProgressing) {
		c := meta.FindStatusCondition(a.Conditions, fleet.StagedUpdateRunConditionProgressing)
		switch c.Reason {
		case fleet.UpdateRunStuckReason, fleet.UpdateRunStoppingReason, fleet.UpdateRunStoppedReason:
			out = append(out, strings.TrimPrefix(c.Reason, "UpdateRun")+": "+c.Message)
		}
	}
	if changed(b.Conditions, a.Conditions, fleet.StagedUpdateRunConditionSucceeded) {
		c := meta.FindStatusCondition(a.Conditions, fleet.StagedUpdateRunConditionSucceeded)
		switch {
		case c.Status == metav1.ConditionTrue && c.Reason == fleet.UpdateRunPartiallySucceededReason:
			out = append(out, "partially succeeded: "+c.Message)
		case c.Status == metav1.ConditionTrue:
			out = append(out, "succeeded")
		default:
			out = append(out, "failed: "+c.Message)
		}
	}
	return out
}

func planSummary(s fleet.UpdateRunStatus) string {
	n := 0
	for _, st := range s.StagesStatus {
		n += len(st.Clusters)
	}
	del := 0
	if s.DeletionStageStatus != nil {
		del = len(s.DeletionStageStatus.Clusters)
	}
	out := fmt.Sprintf("%d cluster(s) in %d stage(s)", n, len(s.StagesStatus))
	if del > 0 {
		out += fmt.Sprintf(", %d to delete", del)
	}
	return out
}

func diffStage(b, a *fleet.StageUpdatingStatus, deletion bool) []string {
	var out []string
	name := runview.Label(a.StageName)
	var bc []fleet.ClusterUpdatingStatus
	var bt, bat []fleet.StageTaskStatus
	var bconds []metav1.Condition
	if b != nil {
		bc, bt, bat, bconds = b.Clusters, b.BeforeStageTaskStatus, b.AfterStageTaskStatus, b.Conditions
	}
	out = append(out, diffTasks(name, "before", bt, a.BeforeStageTaskStatus)...)
	for i, c := range a.Clusters {
		var prev []metav1.Condition
		if i < len(bc) {
			prev = bc[i].Conditions
		}
		verb, done := "started", "succeeded"
		if deletion {
			verb, done = "deleting", "deleted"
		}
		if changed(prev, c.Conditions, fleet.ClusterUpdatingConditionStarted) &&
			meta.IsStatusConditionTrue(c.Conditions, fleet.ClusterUpdatingConditionStarted) {
			out = append(out, fmt.Sprintf("%s: cluster %s %s", name, c.ClusterName, verb))
		}
		if changed(prev, c.Conditions, fleet.ClusterUpdatingConditionSucceeded) {
			s := meta.FindStatusCondition(c.Conditions, fleet.ClusterUpdatingConditionSucceeded)
			if s.Status == metav1.ConditionTrue {
				out = append(out, fmt.Sprintf("%s: cluster %s %s", name, c.ClusterName, done))
			} else {
				out = append(out, fmt.Sprintf("%s: cluster %s failed: %s", name, c.ClusterName, s.Message))
			}
		}
	}
	if changed(bconds, a.Conditions, fleet.StageUpdatingConditionProgressing) || windowWaitChanged(bconds, a.Conditions) {
		c := meta.FindStatusCondition(a.Conditions, fleet.StageUpdatingConditionProgressing)
		switch c.Reason {
		case fleet.StageUpdatingWaitingReason, fleet.StageUpdatingStoppedReason, fleet.StageUpdatingStoppingReason:
			out = append(out, fmt.Sprintf("%s: %s", name, lowerFirst(c.Message)))
		}
	}
	out = append(out, diffTasks(name, "after", bat, a.AfterStageTaskStatus)...)
	if changed(bconds, a.Conditions, fleet.StageUpdatingConditionSucceeded) {
		c := meta.FindStatusCondition(a.Conditions, fleet.StageUpdatingConditionSucceeded)
		switch {
		case c.Reason == fleet.StageUpdatingSkippedNoClustersReason:
			out = append(out, name+": skipped, it has no clusters")
		case c.Status == metav1.ConditionTrue:
			out = append(out, name+": succeeded")
		default:
			out = append(out, name+": failed: "+c.Message)
		}
	}
	return out
}

func diffTasks(stage, when string, b, a []fleet.StageTaskStatus) []string {
	var out []string
	for i, t := range a {
		var prev []metav1.Condition
		if i < len(b) {
			prev = b[i].Conditions
		}
		if changed(prev, t.Conditions, fleet.StageTaskConditionApprovalRequestCreated) &&
			meta.IsStatusConditionTrue(t.Conditions, fleet.StageTaskConditionApprovalRequestCreated) {
			out = append(out, fmt.Sprintf("%s: approval requested: %s (%s-stage)", stage, t.ApprovalRequestName, when))
		}
		if changed(prev, t.Conditions, fleet.StageTaskConditionApprovalRequestApproved) {
			c := meta.FindStatusCondition(t.Conditions, fleet.StageTaskConditionApprovalRequestApproved)
			if c.Status == metav1.ConditionTrue {
				out = append(out, fmt.Sprintf("%s: approval accepted: %s", stage, t.ApprovalRequestName))
			} else {
				out = append(out, fmt.Sprintf("%s: approval %s not accepted: %s", stage, t.ApprovalRequestName, c.Message))
			}
		}
		if changed(prev, t.Conditions, fleet.StageTaskConditionWaitTimeElapsed) &&
			meta.IsStatusConditionTrue(t.Conditions, fleet.StageTaskConditionWaitTimeElapsed) {
			out = append(out, fmt.Sprintf("%s: wait time elapsed", stage))
		}
	}
	return out
}

// windowWaitChanged: the stage waits for a window other than it did (an
// approval given during a freeze keeps the stage Waiting, now for the
// freeze).
func windowWaitChanged(before, after []metav1.Condition) bool {
	a := meta.FindStatusCondition(after, fleet.StageUpdatingConditionProgressing)
	if a == nil || a.Reason != fleet.StageUpdatingWaitingReason || !strings.HasPrefix(a.Message, fleet.WindowWaitPrefix) {
		return false
	}
	b := meta.FindStatusCondition(before, fleet.StageUpdatingConditionProgressing)
	return b == nil || b.Message != a.Message
}

// changed reports whether condition typ appeared or changed status/reason.
func changed(before, after []metav1.Condition, typ string) bool {
	a := meta.FindStatusCondition(after, typ)
	if a == nil {
		return false
	}
	b := meta.FindStatusCondition(before, typ)
	return b == nil || b.Status != a.Status || b.Reason != a.Reason
}

func lowerFirst(s string) string {
	if s == "" {
		return s
	}
	return strings.ToLower(s[:1]) + s[1:]
}

// WriteTimeline prints the events as a table with virtual offsets.
func WriteTimeline(w io.Writer, events []Event) error {
	tw := tabwriter.NewWriter(w, 0, 8, 3, ' ', 0)
	fmt.Fprintln(tw, "TIME\tRUN\tEVENT")
	for _, e := range events {
		fmt.Fprintf(tw, "+%s\t%s\t%s\n", formatOffset(e.At), e.Run, e.Message)
	}
	return tw.Flush()
}

func formatOffset(d time.Duration) string {
	if d == 0 {
		return "0s"
	}
	return d.Round(time.Second).String()
}
