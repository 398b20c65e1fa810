// Package runview reads what a staged update run is doing from its status:
// its phase, the stage it is in, what it waits for, how far it got and the
// approval requests it waits on. Printers, status commit subjects, forge
// commit statuses and simulate all say it from this one reading, so they
// agree at the edges (a waiting run, a stopped one, the deletion stage, a
// status written for an older spec).
//
// It reads conditions only (spec §2.3–§3.11); the conditions stay the API.
package runview

import (
	"slices"
	"strconv"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	fleet "github.com/gitfleet/gitfleet/api/v1beta1"
)

// View is what a run is doing, as of its status.
type View struct {
	// Phase is fleet.UpdateRun.Phase: the run's conditions in one word.
	Phase string
	// Stages are the update stages, then the deletion stage, as
	// initialization froze them; none before.
	Stages []Stage
	// Current indexes Stages: the stage the run is in, or starts next
	// (a run initialized, or between two stages), the failed stage, or
	// the one a validation failure stopped it in; -1 before initialization
	// and once the run succeeded.
	Current int
	// Waiting is what must happen for the run to move on.
	Waiting Waiting
	// Pending are the approval requests created and not yet approved, of
	// a run that has not finished.
	Pending []Approval
	// StagesDone and ClustersDone count the succeeded update stages
	// (skipped ones included) and clusters, of Updates and of every
	// update stage's clusters; the deletion stage is counted apart, in
	// its Stage.
	StagesDone, Updates, ClustersDone, Clusters int
}

// Stage is one stage of the run.
type Stage struct {
	Name string
	// Deletion marks the deletion stage, which comes after every update
	// stage (Number 0).
	Deletion bool
	// Number is the update stage's position, from 1.
	Number int
	State  StageState
	// Clusters are the stage's clusters in the order they are updated.
	Clusters []Cluster
	// Done and Total count the stage's clusters that succeeded (were
	// deleted, in the deletion stage) and all of them.
	Done, Total int
	// InFlight are the clusters updating (started, not finished), in
	// order.
	InFlight []string
	// Message is the stage's failure (Succeeded=False), when it failed.
	Message string
}

// StageState is where a stage stands.
type StageState string

const (
	StagePending   StageState = "Pending"   // not started
	StageWaiting   StageState = "Waiting"   // waiting for its before- or after-stage tasks
	StageUpdating  StageState = "Updating"  // clusters updating (deleting)
	StageStopping  StageState = "Stopping"  // stop asked, clusters still in flight
	StageStopped   StageState = "Stopped"   // stopped, waiting to be resumed
	StageSucceeded StageState = "Succeeded" // clusters done and after-stage tasks completed
	StageSkipped   StageState = "Skipped"   // no clusters: skipped with its tasks (spec §3.10)
	StageFailed    StageState = "Failed"    // aborted
)

// Cluster is one cluster of a stage.
type Cluster struct {
	Name  string
	State ClusterState
	// Message is the cluster's failure (Succeeded=False), when it failed,
	// or why it was skipped.
	Message string
}

// ClusterState is where a cluster of a stage stands (spec §3.2).
type ClusterState string

const (
	ClusterPending   ClusterState = "Pending"   // not started
	ClusterUpdating  ClusterState = "Updating"  // started, not finished
	ClusterSucceeded ClusterState = "Succeeded" // updated (deleted, in the deletion stage)
	ClusterFailed    ClusterState = "Failed"    // Succeeded=False
	// ClusterSkipped left the placement under a run that froze its
	// cluster set (Skipped=True, gitfleet's); a retry of the run takes it.
	ClusterSkipped ClusterState = "Skipped"
)

// Label names the stage for people: "stage canary", or "deletion stage".
func (s Stage) Label() string { return Label(s.Name) }

// Label names a stage for people by its name: the deletion stage has a
// long name of KubeFleet's.
func Label(name string) string {
	if name == fleet.UpdateRunDeleteStageName {
		return "deletion stage"
	}
	return "stage " + name
}

// Stage is the current stage, or nil.
func (v View) Stage() *Stage {
	if v.Current < 0 {
		return nil
	}
	return &v.Stages[v.Current]
}

// Finished reports whether the run ended: succeeded, failed, or failed to
// initialize. A finished run ignores changes to its state.
func (v View) Finished() bool {
	switch v.Phase {
	case fleet.PhaseSucceeded, fleet.PhaseFailed, fleet.PhaseInitFailed:
		return true
	}
	return false
}

// Reason says what a run waits for.
type Reason string

const (
	// WaitNone: nothing to wait for (finished, or moving on by itself).
	WaitNone Reason = ""
	// WaitState: a person sets spec.state to Run (an initialized or a
	// stopped run).
	WaitState Reason = "State"
	// WaitApproval: approval requests, and maybe a timed wait beside them.
	WaitApproval Reason = "Approval"
	// WaitTimedWait: the end of an after-stage timed wait.
	WaitTimedWait Reason = "TimedWait"
	// WaitClusters: clusters updating (or being deleted), in a run that
	// progresses or stops.
	WaitClusters Reason = "Clusters"
	// WaitStuck: clusters updating for longer than the stuck threshold.
	WaitStuck Reason = "Stuck"
	// WaitWindow: a RolloutWindow to open or a freeze to end (gitfleet's).
	WaitWindow Reason = "Window"
	// WaitEngine: the status was written for an older generation of the
	// spec (spec.state changed since); gitfleet has not acted on the
	// change yet.
	WaitEngine Reason = "Engine"
)

// Waiting is what must happen for the run to move on.
type Waiting struct {
	For Reason
	// Approvals are the requests the current gate waits on (WaitApproval).
	Approvals []string
	// Ignored are those of Approvals a person approved and gitfleet did
	// not take (an Approved condition at the wrong observedGeneration, or
	// an edit refused): the task's message says why.
	Ignored []string
	// TimedWait: an after-stage timed wait is running; Until is its end
	// when the status says it (gitfleet's WaitTimeElapsed=False message,
	// deliberate difference 6), zero otherwise.
	TimedWait bool
	Until     time.Time
	// Clusters are the clusters in flight (WaitClusters, WaitStuck).
	Clusters []string
	// Generation is the spec's generation not yet acted on (WaitEngine).
	Generation int64
	// Window is the stage's wait, "waiting for window <name> (opens
	// <time>)" (WaitWindow).
	Window string
}

// String is the WAITING-FOR column of `gitfleet get runs -o wide`:
// "approval <request>", "wait until <time>", "clusters <names>",
// "waiting for window <name> (opens <time>)", "spec.state: Run" or
// "gitfleet to act on generation <n>".
func (w Waiting) String() string {
	switch w.For {
	case WaitWindow:
		return w.Window
	case WaitState:
		return "spec.state: Run"
	case WaitClusters, WaitStuck:
		return "clusters " + strings.Join(w.Clusters, ",")
	case WaitEngine:
		return "gitfleet to act on generation " + strconv.FormatInt(w.Generation, 10)
	}
	var out []string
	for _, a := range w.Approvals {
		if slices.Contains(w.Ignored, a) {
			a += " (approval ignored)"
		}
		out = append(out, "approval "+a)
	}
	if w.TimedWait {
		out = append(out, w.TimedWaitString())
	}
	return strings.Join(out, ", ")
}

// TimedWaitString says when the timed wait ends: "wait until <RFC 3339>",
// or "timed wait" when the status does not say.
func (w Waiting) TimedWaitString() string {
	if w.Until.IsZero() {
		return "timed wait"
	}
	return "wait until " + w.Until.UTC().Format(time.RFC3339)
}

// Approval is an approval request the run waits on.
type Approval struct {
	Name  string
	Stage string
	// TaskType is fleet.BeforeStageTaskLabelValue or
	// fleet.AfterStageTaskLabelValue, as the request's label.
	TaskType string
	// Created is when the request was created (its task's
	// ApprovalRequestCreated transition).
	Created metav1.Time
	// Ignored says why an approval a person gave was not taken (an
	// Approved condition at the wrong observedGeneration, deliberate
	// difference 5), or is empty.
	Ignored string
}

// Of reads the view of run r.
func Of(r *fleet.UpdateRun) View {
	v := View{Phase: r.Phase(), Current: -1}
	st := &r.Status
	for i := range st.StagesStatus {
		s := stageOf(&st.StagesStatus[i])
		s.Number = i + 1
		v.Stages = append(v.Stages, s)
		v.Updates++
		v.Clusters += s.Total
		v.ClustersDone += s.Done
		if s.State == StageSucceeded || s.State == StageSkipped {
			v.StagesDone++
		}
	}
	if d := st.DeletionStageStatus; d != nil {
		s := stageOf(d)
		s.Deletion = true
		v.Stages = append(v.Stages, s)
	}
	if v.Phase != fleet.PhaseInitializing && v.Phase != fleet.PhaseInitFailed && v.Phase != fleet.PhaseSucceeded {
		v.Current = current(v.Stages)
	}
	if !v.Finished() {
		v.Pending = pending(r)
	}
	v.Waiting = waiting(r, &v)
	return v
}

// stageOf reads one stage's state and clusters.
func stageOf(s *fleet.StageUpdatingStatus) Stage {
	out := Stage{Name: s.StageName, Total: len(s.Clusters), State: StagePending}
	for _, c := range s.Clusters {
		cl := Cluster{Name: c.ClusterName, State: ClusterPending}
		succeeded := meta.FindStatusCondition(c.Conditions, fleet.ClusterUpdatingConditionSucceeded)
		switch {
		case succeeded != nil && succeeded.Status == metav1.ConditionTrue:
			cl.State = ClusterSucceeded
			out.Done++
		case succeeded != nil && succeeded.Status == metav1.ConditionFalse:
			cl.State, cl.Message = ClusterFailed, succeeded.Message
		case meta.IsStatusConditionTrue(c.Conditions, fleet.ClusterUpdatingConditionSkipped):
			cl.State = ClusterSkipped
			cl.Message = meta.FindStatusCondition(c.Conditions, fleet.ClusterUpdatingConditionSkipped).Message
		case meta.IsStatusConditionTrue(c.Conditions, fleet.ClusterUpdatingConditionStarted):
			cl.State = ClusterUpdating
			out.InFlight = append(out.InFlight, c.ClusterName)
		}
		out.Clusters = append(out.Clusters, cl)
	}
	if c := meta.FindStatusCondition(s.Conditions, fleet.StageUpdatingConditionSucceeded); c != nil {
		switch {
		case c.Status == metav1.ConditionFalse:
			out.State, out.Message = StageFailed, c.Message
		case c.Reason == fleet.StageUpdatingSkippedNoClustersReason:
			out.State = StageSkipped
		default:
			out.State = StageSucceeded
		}
		return out
	}
	if c := meta.FindStatusCondition(s.Conditions, fleet.StageUpdatingConditionProgressing); c != nil {
		switch c.Reason {
		case fleet.StageUpdatingWaitingReason:
			out.State = StageWaiting
		case fleet.StageUpdatingStoppingReason:
			out.State = StageStopping
		case fleet.StageUpdatingStoppedReason:
			out.State = StageStopped
		default:
			out.State = StageUpdating
		}
	}
	return out
}

// current finds the stage the run is in as KubeFleet's validation does
// (spec §2.3 step 7): a failed stage, else the one started and not
// finished, else the first update stage not finished, else the deletion
// stage until it succeeds.
func current(stages []Stage) int {
	for i, s := range stages {
		if s.State == StageFailed {
			return i
		}
	}
	for i, s := range stages {
		if s.State != StagePending && s.State != StageSucceeded && s.State != StageSkipped {
			return i
		}
	}
	for i, s := range stages {
		if s.State != StageSucceeded && s.State != StageSkipped {
			return i
		}
	}
	return -1
}

// waiting says what the run waits for, from its phase and current stage.
func waiting(r *fleet.UpdateRun, v *View) Waiting {
	if v.Finished() || v.Phase == fleet.PhaseInitializing {
		return Waiting{}
	}
	if gen, ok := stale(r); ok {
		return Waiting{For: WaitEngine, Generation: gen}
	}
	cur := v.Stage()
	switch v.Phase {
	case fleet.PhaseInitialized, fleet.PhaseStopped:
		if r.Spec.State != fleet.StateRun {
			return Waiting{For: WaitState}
		}
	case fleet.PhaseProgressing, fleet.PhaseStopping:
		if cur != nil && len(cur.InFlight) > 0 {
			return Waiting{For: WaitClusters, Clusters: cur.InFlight}
		}
	case fleet.PhaseStuck:
		if cur != nil {
			return Waiting{For: WaitStuck, Clusters: cur.InFlight}
		}
	case fleet.PhaseWaiting:
		if cur != nil {
			return gate(stageStatus(r, v.Current), *cur)
		}
	}
	return Waiting{}
}

// gate is what a waiting stage waits on: its before-stage approval until a
// cluster starts, its after-stage tasks once every cluster succeeded. An
// after-stage approval and timed wait run side by side (spec §3.9).
func gate(s *fleet.StageUpdatingStatus, view Stage) Waiting {
	var w Waiting
	if c := meta.FindStatusCondition(s.Conditions, fleet.StageUpdatingConditionProgressing); c != nil &&
		c.Reason == fleet.StageUpdatingWaitingReason && strings.HasPrefix(c.Message, fleet.WindowWaitPrefix) {
		return Waiting{For: WaitWindow, Window: c.Message}
	}
	if view.Done == 0 && len(view.InFlight) == 0 {
		for _, t := range s.BeforeStageTaskStatus {
			if opensRequest(t) && !approved(t) {
				w.addApproval(t)
			}
		}
		if len(w.Approvals) > 0 {
			w.For = WaitApproval
			return w
		}
	}
	if view.Done < view.Total {
		return w
	}
	for _, t := range s.AfterStageTaskStatus {
		switch t.Type {
		case fleet.StageTaskTypeApproval, fleet.StageTaskTypeMetric:
			if !approved(t) {
				w.addApproval(t)
			}
		case fleet.StageTaskTypeTimedWait:
			if c := meta.FindStatusCondition(t.Conditions, fleet.StageTaskConditionWaitTimeElapsed); c == nil || c.Status != metav1.ConditionTrue {
				w.TimedWait, w.Until = true, waitEnd(c)
			}
		}
	}
	switch {
	case len(w.Approvals) > 0:
		w.For = WaitApproval
	case w.TimedWait:
		w.For = WaitTimedWait
	}
	return w
}

func (w *Waiting) addApproval(t fleet.StageTaskStatus) {
	w.Approvals = append(w.Approvals, t.ApprovalRequestName)
	if ignored(t) != "" {
		w.Ignored = append(w.Ignored, t.ApprovalRequestName)
	}
}

// ignored is why a person's approval of the task's request was not taken
// (gitfleet's StageTaskApprovalRequestApprovalIgnored, deliberate
// difference 5), or "".
func ignored(t fleet.StageTaskStatus) string {
	if c := meta.FindStatusCondition(t.Conditions, fleet.StageTaskConditionApprovalRequestApproved); c != nil &&
		c.Status == metav1.ConditionFalse && c.Reason == fleet.StageTaskApprovalIgnoredReason {
		return c.Message
	}
	return ""
}

// waitEnd reads the end of a timed wait from gitfleet's WaitTimeElapsed
// message ("Wait time ends at <RFC 3339>", deliberate difference 6).
func waitEnd(c *metav1.Condition) time.Time {
	if c == nil {
		return time.Time{}
	}
	end, ok := strings.CutPrefix(c.Message, "Wait time ends at ")
	if !ok {
		return time.Time{}
	}
	t, err := time.Parse(time.RFC3339, end)
	if err != nil {
		return time.Time{}
	}
	return t
}

// opensRequest: an Approval task, or a Metric task (gitfleet's), whose
// request a person may approve until its gate does.
func opensRequest(t fleet.StageTaskStatus) bool {
	return t.Type == fleet.StageTaskTypeApproval || t.Type == fleet.StageTaskTypeMetric
}

func approved(t fleet.StageTaskStatus) bool {
	return meta.IsStatusConditionTrue(t.Conditions, fleet.StageTaskConditionApprovalRequestApproved)
}

// stageStatus is the status of Stages[i].
func stageStatus(r *fleet.UpdateRun, i int) *fleet.StageUpdatingStatus {
	if i < len(r.Status.StagesStatus) {
		return &r.Status.StagesStatus[i]
	}
	return r.Status.DeletionStageStatus
}

// stale reports the generation of a spec the status was not written for:
// the engine stamps every condition with the generation it acted on
// (spec §1.4), so an older stamp means spec.state changed since. Unknown
// generations (0) are not stale.
func stale(r *fleet.UpdateRun) (int64, bool) {
	var seen int64
	for _, c := range r.Status.Conditions {
		seen = max(seen, c.ObservedGeneration)
	}
	if seen == 0 || r.Generation <= seen {
		return 0, false
	}
	return r.Generation, true
}

// pending lists the approval requests created and not approved, stage by
// stage, before-stage first.
func pending(r *fleet.UpdateRun) []Approval {
	var out []Approval
	add := func(stage, taskType string, tasks []fleet.StageTaskStatus) {
		for _, t := range tasks {
			if !opensRequest(t) || approved(t) {
				continue
			}
			created := meta.FindStatusCondition(t.Conditions, fleet.StageTaskConditionApprovalRequestCreated)
			if created == nil || created.Status != metav1.ConditionTrue {
				continue
			}
			out = append(out, Approval{Name: t.ApprovalRequestName, Stage: stage, TaskType: taskType,
				Created: created.LastTransitionTime, Ignored: ignored(t)})
		}
	}
	stages := r.Status.StagesStatus
	if d := r.Status.DeletionStageStatus; d != nil {
		stages = append(stages[:len(stages):len(stages)], *d)
	}
	for _, s := range stages {
		add(s.StageName, fleet.BeforeStageTaskLabelValue, s.BeforeStageTaskStatus)
		add(s.StageName, fleet.AfterStageTaskLabelValue, s.AfterStageTaskStatus)
	}
	return out
}

// PendingNames are the names of the pending approval requests.
func (v View) PendingNames() []string {
	out := make([]string, len(v.Pending))
	for i, a := range v.Pending {
		out[i] = a.Name
	}
	return out
}
