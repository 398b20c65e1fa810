package runview

import (
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	fleet "github.com/gitfleet/gitfleet/api/v1beta1"
)

var t0 = time.Date(2025, 7, 22, 21, 28, 8, 0, time.UTC)

func cond(typ string, status metav1.ConditionStatus, reason string) metav1.Condition {
	return metav1.Condition{Type: typ, Status: status, Reason: reason, ObservedGeneration: 1, LastTransitionTime: metav1.NewTime(t0)}
}

func started(name string) fleet.ClusterUpdatingStatus {
	return fleet.ClusterUpdatingStatus{ClusterName: name, Conditions: []metav1.Condition{
		cond(fleet.ClusterUpdatingConditionStarted, metav1.ConditionTrue, fleet.ClusterUpdatingStartedReason)}}
}

func done(name string) fleet.ClusterUpdatingStatus {
	c := started(name)
	c.Conditions = append(c.Conditions, cond(fleet.ClusterUpdatingConditionSucceeded, metav1.ConditionTrue, fleet.ClusterUpdatingSucceededReason))
	return c
}

func approval(name string, conds ...metav1.Condition) fleet.StageTaskStatus {
	return fleet.StageTaskStatus{Type: fleet.StageTaskTypeApproval, ApprovalRequestName: name, Conditions: conds}
}

var (
	created     = cond(fleet.StageTaskConditionApprovalRequestCreated, metav1.ConditionTrue, fleet.StageTaskApprovalRequestCreatedReason)
	approvedC   = cond(fleet.StageTaskConditionApprovalRequestApproved, metav1.ConditionTrue, fleet.StageTaskApprovalRequestApprovedReason)
	stageDone   = cond(fleet.StageUpdatingConditionSucceeded, metav1.ConditionTrue, fleet.StageUpdatingSucceededReason)
	stageStart  = cond(fleet.StageUpdatingConditionProgressing, metav1.ConditionTrue, fleet.StageUpdatingStartedReason)
	stageWait   = cond(fleet.StageUpdatingConditionProgressing, metav1.ConditionFalse, fleet.StageUpdatingWaitingReason)
	initialized = cond(fleet.StagedUpdateRunConditionInitialized, metav1.ConditionTrue, fleet.UpdateRunInitializeSucceededReason)
)

func progressing(status metav1.ConditionStatus, reason string) metav1.Condition {
	return cond(fleet.StagedUpdateRunConditionProgressing, status, reason)
}

func timedWait(conds ...metav1.Condition) fleet.StageTaskStatus {
	return fleet.StageTaskStatus{Type: fleet.StageTaskTypeTimedWait, Conditions: conds}
}

func waitEnds(at string) metav1.Condition {
	c := cond(fleet.StageTaskConditionWaitTimeElapsed, metav1.ConditionFalse, fleet.AfterStageTaskWaitTimeNotElapsedReason)
	c.Message = "Wait time ends at " + at
	return c
}

// initializedRun is web, initialized in state Initialize: staging
// (member2; after it a timed wait), canary (member3, member1; an approval
// before and after it), and a deletion stage for member4 gated by an
// approval (gitfleet's deleteStage). No stage has started.
func initializedRun() *fleet.UpdateRun {
	return &fleet.UpdateRun{
		ObjectMeta: metav1.ObjectMeta{Name: "web", Generation: 1},
		Spec:       fleet.UpdateRunSpec{PlacementName: "web", StagedUpdateStrategyName: "s", State: fleet.StateInitialize},
		Status: fleet.UpdateRunStatus{
			StagesStatus: []fleet.StageUpdatingStatus{
				{StageName: "staging", Clusters: []fleet.ClusterUpdatingStatus{{ClusterName: "member2"}},
					AfterStageTaskStatus: []fleet.StageTaskStatus{timedWait()}},
				{StageName: "canary", Clusters: []fleet.ClusterUpdatingStatus{{ClusterName: "member3"}, {ClusterName: "member1"}},
					BeforeStageTaskStatus: []fleet.StageTaskStatus{approval("web-before-canary")},
					AfterStageTaskStatus:  []fleet.StageTaskStatus{approval("web-after-canary")}},
			},
			DeletionStageStatus: &fleet.StageUpdatingStatus{StageName: fleet.UpdateRunDeleteStageName,
				Clusters:              []fleet.ClusterUpdatingStatus{{ClusterName: "member4"}},
				BeforeStageTaskStatus: []fleet.StageTaskStatus{approval("web-before-delete-stage")}},
			Conditions: []metav1.Condition{initialized},
		},
	}
}

// runWith is the initialized run in state Run (or the state given by f),
// with its run-level Progressing condition and edited by f.
func runWith(p metav1.Condition, f func(r *fleet.UpdateRun, staging, canary, deletion *fleet.StageUpdatingStatus)) *fleet.UpdateRun {
	r := initializedRun()
	r.Spec.State = fleet.StateRun
	r.Status.Conditions = append(r.Status.Conditions, p)
	st := &r.Status
	f(r, &st.StagesStatus[0], &st.StagesStatus[1], st.DeletionStageStatus)
	return r
}

// stagingDone finishes staging and its timed wait.
func stagingDone(s *fleet.StageUpdatingStatus) {
	s.Clusters = []fleet.ClusterUpdatingStatus{done("member2")}
	s.AfterStageTaskStatus[0].Conditions = []metav1.Condition{cond(fleet.StageTaskConditionWaitTimeElapsed, metav1.ConditionTrue, fleet.AfterStageTaskWaitTimeElapsedReason)}
	s.Conditions = []metav1.Condition{cond(fleet.StageUpdatingConditionProgressing, metav1.ConditionFalse, fleet.StageUpdatingSucceededReason), stageDone}
}

// canaryDone finishes canary and both its approvals.
func canaryDone(s *fleet.StageUpdatingStatus) {
	s.Clusters = []fleet.ClusterUpdatingStatus{done("member3"), done("member1")}
	s.BeforeStageTaskStatus[0].Conditions = []metav1.Condition{created, approvedC}
	s.AfterStageTaskStatus[0].Conditions = []metav1.Condition{created, approvedC}
	s.Conditions = []metav1.Condition{cond(fleet.StageUpdatingConditionProgressing, metav1.ConditionFalse, fleet.StageUpdatingSucceededReason), stageDone}
}

func TestViewSaysWhatTheRunIsDoing(t *testing.T) {
	type want struct {
		phase   string
		stage   string     // the current stage's name
		state   StageState // the current stage's state
		waiting Reason
		column  string   // Waiting.String, the WAITING-FOR column
		pending []string // pending approval requests
		// StagesDone/Updates ClustersDone/Clusters
		progress string
	}
	for _, tc := range []struct {
		name string
		run  *fleet.UpdateRun
		want want
	}{
		{"just created, not initialized", &fleet.UpdateRun{ObjectMeta: metav1.ObjectMeta{Name: "web", Generation: 1}},
			want{phase: fleet.PhaseInitializing, progress: "0/0 0/0"}},
		{"initialization failed", &fleet.UpdateRun{ObjectMeta: metav1.ObjectMeta{Name: "web", Generation: 1},
			Status: fleet.UpdateRunStatus{Conditions: []metav1.Condition{cond(fleet.StagedUpdateRunConditionInitialized, metav1.ConditionFalse, fleet.UpdateRunInitializeFailedReason)}}},
			want{phase: fleet.PhaseInitFailed, progress: "0/0 0/0"}},
		// KubeFleet's validation starts it at index 0 (spec §2.3 step 7).
		{"initialized but no stage started", initializedRun(),
			want{phase: fleet.PhaseInitialized, stage: "staging", state: StagePending, waiting: WaitState, column: "spec.state: Run", progress: "0/2 0/3"}},
		{"state set to Run in Git, not acted on yet (unknown generation)", func() *fleet.UpdateRun {
			r := initializedRun()
			r.Spec.State, r.Generation = fleet.StateRun, 2
			return r
		}(), want{phase: fleet.PhaseInitialized, stage: "staging", state: StagePending, waiting: WaitEngine, column: "gitfleet to act on generation 2", progress: "0/2 0/3"}},
		{"first stage updating", runWith(progressing(metav1.ConditionTrue, fleet.UpdateRunProgressingReason), func(_ *fleet.UpdateRun, staging, _, _ *fleet.StageUpdatingStatus) {
			staging.Clusters = []fleet.ClusterUpdatingStatus{started("member2")}
			staging.Conditions = []metav1.Condition{stageStart}
		}), want{phase: fleet.PhaseProgressing, stage: "staging", state: StageUpdating, waiting: WaitClusters, column: "clusters member2", progress: "0/2 0/3"}},
		{"after-stage timed wait running", runWith(progressing(metav1.ConditionFalse, fleet.UpdateRunWaitingReason), func(_ *fleet.UpdateRun, staging, _, _ *fleet.StageUpdatingStatus) {
			staging.Clusters = []fleet.ClusterUpdatingStatus{done("member2")}
			staging.AfterStageTaskStatus[0].Conditions = []metav1.Condition{waitEnds("2025-07-22T21:29:23Z")}
			staging.Conditions = []metav1.Condition{stageWait}
		}), want{phase: fleet.PhaseWaiting, stage: "staging", state: StageWaiting, waiting: WaitTimedWait, column: "wait until 2025-07-22T21:29:23Z", progress: "0/2 1/3"}},
		// KubeFleet writes no WaitTimeElapsed condition until the wait ends.
		{"after-stage timed wait running, its end not written", runWith(progressing(metav1.ConditionFalse, fleet.UpdateRunWaitingReason), func(_ *fleet.UpdateRun, staging, _, _ *fleet.StageUpdatingStatus) {
			staging.Clusters = []fleet.ClusterUpdatingStatus{done("member2")}
			staging.Conditions = []metav1.Condition{stageWait}
		}), want{phase: fleet.PhaseWaiting, stage: "staging", state: StageWaiting, waiting: WaitTimedWait, column: "timed wait", progress: "0/2 1/3"}},
		{"between stages: stage succeeded, the next not started", runWith(progressing(metav1.ConditionTrue, fleet.UpdateRunProgressingReason), func(_ *fleet.UpdateRun, staging, _, _ *fleet.StageUpdatingStatus) {
			stagingDone(staging)
		}), want{phase: fleet.PhaseProgressing, stage: "canary", state: StagePending, progress: "1/2 1/3"}},
		// The after-stage approval's name is known from initialization; it
		// is not waited on before the stage's clusters are done.
		{"stage succeeded, before-task approval pending of the next stage", runWith(progressing(metav1.ConditionFalse, fleet.UpdateRunWaitingReason), func(_ *fleet.UpdateRun, staging, canary, _ *fleet.StageUpdatingStatus) {
			stagingDone(staging)
			canary.BeforeStageTaskStatus[0].Conditions = []metav1.Condition{created}
			canary.Conditions = []metav1.Condition{stageWait}
		}), want{phase: fleet.PhaseWaiting, stage: "canary", state: StageWaiting, waiting: WaitApproval, column: "approval web-before-canary",
			pending: []string{"web-before-canary"}, progress: "1/2 1/3"}},
		// Both run at once (spec §3.9): the approval is named first
		// whatever the tasks' order, since a person must act.
		{"after-stage timed wait and approval side by side", runWith(progressing(metav1.ConditionFalse, fleet.UpdateRunWaitingReason), func(_ *fleet.UpdateRun, staging, canary, _ *fleet.StageUpdatingStatus) {
			stagingDone(staging)
			canaryDone(canary)
			canary.Conditions = []metav1.Condition{stageWait}
			canary.AfterStageTaskStatus = []fleet.StageTaskStatus{timedWait(waitEnds("2025-07-22T22:00:00Z")), approval("web-after-canary", created)}
		}), want{phase: fleet.PhaseWaiting, stage: "canary", state: StageWaiting, waiting: WaitApproval, column: "approval web-after-canary, wait until 2025-07-22T22:00:00Z",
			pending: []string{"web-after-canary"}, progress: "1/2 3/3"}},
		{"approval given at the wrong generation stays pending", runWith(progressing(metav1.ConditionFalse, fleet.UpdateRunWaitingReason), func(_ *fleet.UpdateRun, staging, canary, _ *fleet.StageUpdatingStatus) {
			stagingDone(staging)
			ignored := cond(fleet.StageTaskConditionApprovalRequestApproved, metav1.ConditionFalse, fleet.StageTaskApprovalIgnoredReason)
			ignored.Message = "Approved condition ignored: its observedGeneration 0 does not match the approval request's generation 1; set observedGeneration: 1"
			canary.BeforeStageTaskStatus[0].Conditions = []metav1.Condition{created, ignored}
			canary.Conditions = []metav1.Condition{stageWait}
		}), want{phase: fleet.PhaseWaiting, stage: "canary", state: StageWaiting, waiting: WaitApproval, column: "approval web-before-canary (approval ignored)",
			pending: []string{"web-before-canary"}, progress: "1/2 1/3"}},
		{"stuck", runWith(progressing(metav1.ConditionFalse, fleet.UpdateRunStuckReason), func(_ *fleet.UpdateRun, staging, canary, _ *fleet.StageUpdatingStatus) {
			stagingDone(staging)
			canary.BeforeStageTaskStatus[0].Conditions = []metav1.Condition{created, approvedC}
			canary.Clusters = []fleet.ClusterUpdatingStatus{done("member3"), started("member1")}
			canary.Conditions = []metav1.Condition{stageStart}
		}), want{phase: fleet.PhaseStuck, stage: "canary", state: StageUpdating, waiting: WaitStuck, column: "clusters member1", progress: "1/2 2/3"}},
		{"stopping mid-stage, a cluster still in flight", runWith(progressing(metav1.ConditionUnknown, fleet.UpdateRunStoppingReason), func(r *fleet.UpdateRun, staging, canary, _ *fleet.StageUpdatingStatus) {
			r.Spec.State = fleet.StateStop
			stagingDone(staging)
			canary.BeforeStageTaskStatus[0].Conditions = []metav1.Condition{created, approvedC}
			canary.Clusters = []fleet.ClusterUpdatingStatus{done("member3"), started("member1")}
			canary.Conditions = []metav1.Condition{cond(fleet.StageUpdatingConditionProgressing, metav1.ConditionUnknown, fleet.StageUpdatingStoppingReason)}
		}), want{phase: fleet.PhaseStopping, stage: "canary", state: StageStopping, waiting: WaitClusters, column: "clusters member1", progress: "1/2 2/3"}},
		{"run stopped mid-stage", runWith(progressing(metav1.ConditionFalse, fleet.UpdateRunStoppedReason), func(r *fleet.UpdateRun, staging, canary, _ *fleet.StageUpdatingStatus) {
			r.Spec.State = fleet.StateStop
			stagingDone(staging)
			canary.BeforeStageTaskStatus[0].Conditions = []metav1.Condition{created, approvedC}
			canary.Clusters = []fleet.ClusterUpdatingStatus{done("member3"), {ClusterName: "member1"}}
			canary.Conditions = []metav1.Condition{cond(fleet.StageUpdatingConditionProgressing, metav1.ConditionFalse, fleet.StageUpdatingStoppedReason)}
		}), want{phase: fleet.PhaseStopped, stage: "canary", state: StageStopped, waiting: WaitState, column: "spec.state: Run", progress: "1/2 2/3"}},
		// Approvals given while stopped are taken only in state Run (spec
		// §4.3): the request stays pending, the run waits for a person
		// to resume it.
		{"run stopped while a before-stage approval is pending", runWith(progressing(metav1.ConditionFalse, fleet.UpdateRunStoppedReason), func(r *fleet.UpdateRun, staging, canary, _ *fleet.StageUpdatingStatus) {
			r.Spec.State = fleet.StateStop
			stagingDone(staging)
			canary.BeforeStageTaskStatus[0].Conditions = []metav1.Condition{created}
			canary.Conditions = []metav1.Condition{cond(fleet.StageUpdatingConditionProgressing, metav1.ConditionFalse, fleet.StageUpdatingStoppedReason)}
		}), want{phase: fleet.PhaseStopped, stage: "canary", state: StageStopped, waiting: WaitState, column: "spec.state: Run",
			pending: []string{"web-before-canary"}, progress: "1/2 1/3"}},
		{"run stopped, resumed in Git, not acted on yet (unknown generation)", runWith(progressing(metav1.ConditionFalse, fleet.UpdateRunStoppedReason), func(r *fleet.UpdateRun, staging, canary, _ *fleet.StageUpdatingStatus) {
			r.Generation = 3
			stagingDone(staging)
			canary.Conditions = []metav1.Condition{cond(fleet.StageUpdatingConditionProgressing, metav1.ConditionFalse, fleet.StageUpdatingStoppedReason)}
		}), want{phase: fleet.PhaseStopped, stage: "canary", state: StageStopped, waiting: WaitEngine, column: "gitfleet to act on generation 3", progress: "1/2 1/3"}},
		{"deletion stage waiting for its approval", runWith(progressing(metav1.ConditionFalse, fleet.UpdateRunWaitingReason), func(_ *fleet.UpdateRun, staging, canary, deletion *fleet.StageUpdatingStatus) {
			stagingDone(staging)
			canaryDone(canary)
			deletion.BeforeStageTaskStatus[0].Conditions = []metav1.Condition{created}
			deletion.Conditions = []metav1.Condition{stageWait}
		}), want{phase: fleet.PhaseWaiting, stage: fleet.UpdateRunDeleteStageName, state: StageWaiting, waiting: WaitApproval, column: "approval web-before-delete-stage",
			pending: []string{"web-before-delete-stage"}, progress: "2/2 3/3"}},
		{"deletion stage", runWith(progressing(metav1.ConditionTrue, fleet.UpdateRunProgressingReason), func(_ *fleet.UpdateRun, staging, canary, deletion *fleet.StageUpdatingStatus) {
			stagingDone(staging)
			canaryDone(canary)
			deletion.BeforeStageTaskStatus[0].Conditions = []metav1.Condition{created, approvedC}
			deletion.Clusters = []fleet.ClusterUpdatingStatus{started("member4")}
			deletion.Conditions = []metav1.Condition{stageStart}
		}), want{phase: fleet.PhaseProgressing, stage: fleet.UpdateRunDeleteStageName, state: StageUpdating, waiting: WaitClusters, column: "clusters member4", progress: "2/2 3/3"}},
		{"empty stage skipped", runWith(progressing(metav1.ConditionTrue, fleet.UpdateRunProgressingReason), func(_ *fleet.UpdateRun, staging, _, _ *fleet.StageUpdatingStatus) {
			staging.Clusters = nil
			staging.Conditions = []metav1.Condition{cond(fleet.StageUpdatingConditionProgressing, metav1.ConditionFalse, fleet.StageUpdatingSkippedNoClustersReason),
				cond(fleet.StageUpdatingConditionSucceeded, metav1.ConditionTrue, fleet.StageUpdatingSkippedNoClustersReason)}
		}), want{phase: fleet.PhaseProgressing, stage: "canary", state: StagePending, progress: "1/2 0/2"}},
		{"succeeded", runWith(progressing(metav1.ConditionFalse, fleet.UpdateRunSucceededReason), func(r *fleet.UpdateRun, staging, canary, deletion *fleet.StageUpdatingStatus) {
			r.Status.Conditions = append(r.Status.Conditions, cond(fleet.StagedUpdateRunConditionSucceeded, metav1.ConditionTrue, fleet.UpdateRunSucceededReason))
			stagingDone(staging)
			canaryDone(canary)
			deletion.BeforeStageTaskStatus[0].Conditions = []metav1.Condition{created, approvedC}
			deletion.Clusters = []fleet.ClusterUpdatingStatus{done("member4")}
			deletion.Conditions = []metav1.Condition{stageDone}
		}), want{phase: fleet.PhaseSucceeded, progress: "2/2 3/3"}},
		// A finished run ignores changes to its state (spec §2.1 step 6).
		{"succeeded, then its state changed in Git", runWith(progressing(metav1.ConditionFalse, fleet.UpdateRunSucceededReason), func(r *fleet.UpdateRun, staging, canary, deletion *fleet.StageUpdatingStatus) {
			r.Generation, r.Spec.State = 2, fleet.StateStop
			r.Status.Conditions = append(r.Status.Conditions, cond(fleet.StagedUpdateRunConditionSucceeded, metav1.ConditionTrue, fleet.UpdateRunSucceededReason))
			stagingDone(staging)
			canaryDone(canary)
			deletion.Clusters = []fleet.ClusterUpdatingStatus{done("member4")}
			deletion.Conditions = []metav1.Condition{stageDone}
		}), want{phase: fleet.PhaseSucceeded, progress: "2/2 3/3"}},
		// A failed run waits on nothing, not even the request it created.
		{"failed in a stage", runWith(progressing(metav1.ConditionFalse, fleet.UpdateRunFailedReason), func(r *fleet.UpdateRun, staging, canary, _ *fleet.StageUpdatingStatus) {
			r.Status.Conditions = append(r.Status.Conditions, cond(fleet.StagedUpdateRunConditionSucceeded, metav1.ConditionFalse, fleet.UpdateRunFailedReason))
			stagingDone(staging)
			canary.BeforeStageTaskStatus[0].Conditions = []metav1.Condition{created, approvedC}
			canary.AfterStageTaskStatus[0].Conditions = []metav1.Condition{created}
			canary.Clusters = []fleet.ClusterUpdatingStatus{done("member3"), done("member1")}
			canary.Conditions = []metav1.Condition{cond(fleet.StageUpdatingConditionProgressing, metav1.ConditionFalse, fleet.StageUpdatingFailedReason),
				cond(fleet.StageUpdatingConditionSucceeded, metav1.ConditionFalse, fleet.StageUpdatingFailedReason)}
		}), want{phase: fleet.PhaseFailed, stage: "canary", state: StageFailed, progress: "1/2 3/3"}},
		// Validation failures fail the run, not a stage (spec §2.3): the
		// run stopped where it was.
		{"failed validation mid-stage", runWith(progressing(metav1.ConditionFalse, fleet.UpdateRunFailedReason), func(r *fleet.UpdateRun, staging, canary, _ *fleet.StageUpdatingStatus) {
			r.Status.Conditions = append(r.Status.Conditions, cond(fleet.StagedUpdateRunConditionSucceeded, metav1.ConditionFalse, fleet.UpdateRunFailedReason))
			stagingDone(staging)
			canary.BeforeStageTaskStatus[0].Conditions = []metav1.Condition{created, approvedC}
			canary.Clusters = []fleet.ClusterUpdatingStatus{done("member3"), started("member1")}
			canary.Conditions = []metav1.Condition{stageStart}
		}), want{phase: fleet.PhaseFailed, stage: "canary", state: StageUpdating, progress: "1/2 2/3"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			v := Of(tc.run)
			var got want
			got.phase = v.Phase
			if s := v.Stage(); s != nil {
				got.stage, got.state = s.Name, s.State
			}
			got.waiting, got.column = v.Waiting.For, v.Waiting.String()
			got.pending = v.PendingNames()
			if len(got.pending) == 0 {
				got.pending = nil
			}
			got.progress = strings.Join([]string{itoa(v.StagesDone) + "/" + itoa(v.Updates), itoa(v.ClustersDone) + "/" + itoa(v.Clusters)}, " ")
			if got.phase != tc.want.phase || got.stage != tc.want.stage || got.state != tc.want.state || got.waiting != tc.want.waiting ||
				got.column != tc.want.column || !slices.Equal(got.pending, tc.want.pending) || got.progress != tc.want.progress {
				t.Errorf("view\n got %+v\nwant %+v", got, tc.want)
			}
		})
	}
}

func itoa(n int) string { return strconv.Itoa(n) }

// A pending approval says where it is, since when, and why a person's
// approval was not taken.
func TestPendingApprovalSaysWhereSinceWhenAndWhyIgnored(t *testing.T) {
	r := runWith(progressing(metav1.ConditionFalse, fleet.UpdateRunWaitingReason), func(_ *fleet.UpdateRun, staging, canary, _ *fleet.StageUpdatingStatus) {
		stagingDone(staging)
		ignored := cond(fleet.StageTaskConditionApprovalRequestApproved, metav1.ConditionFalse, fleet.StageTaskApprovalIgnoredReason)
		ignored.Message = "Approved condition ignored"
		canary.BeforeStageTaskStatus[0].Conditions = []metav1.Condition{created, ignored}
		canary.Conditions = []metav1.Condition{stageWait}
	})
	got := Of(r).Pending
	want := []Approval{{Name: "web-before-canary", Stage: "canary", TaskType: fleet.BeforeStageTaskLabelValue, Created: metav1.NewTime(t0), Ignored: "Approved condition ignored"}}
	if !slices.EqualFunc(got, want, func(a, b Approval) bool {
		return a.Name == b.Name && a.Stage == b.Stage && a.TaskType == b.TaskType && a.Created.Equal(&b.Created) && a.Ignored == b.Ignored
	}) {
		t.Errorf("pending %+v, want %+v", got, want)
	}
}

func TestLabelNamesTheDeletionStage(t *testing.T) {
	if got := Label("canary"); got != "stage canary" {
		t.Errorf("Label(canary) = %q", got)
	}
	if got := Label(fleet.UpdateRunDeleteStageName); got != "deletion stage" {
		t.Errorf("Label(deleteStage) = %q", got)
	}
}

// Each cluster of a stage is pending, updating, succeeded or failed (with
// its failure), as metrics and forge cluster statuses show it.
func TestClustersSayWhereEachStands(t *testing.T) {
	r := runWith(progressing(metav1.ConditionFalse, fleet.UpdateRunFailedReason), func(_ *fleet.UpdateRun, staging, canary, _ *fleet.StageUpdatingStatus) {
		stagingDone(staging)
		failed := started("member1")
		failedC := cond(fleet.ClusterUpdatingConditionSucceeded, metav1.ConditionFalse, fleet.ClusterUpdatingFailedReason)
		failedC.Message = "the binding is not up-to-date"
		failed.Conditions = append(failed.Conditions, failedC)
		left := started("member6")
		leftC := cond(fleet.ClusterUpdatingConditionSkipped, metav1.ConditionTrue, fleet.ClusterLeftPlacementReason)
		leftC.Message = "left"
		left.Conditions = append(left.Conditions, leftC)
		canary.Clusters = []fleet.ClusterUpdatingStatus{started("member3"), failed, {ClusterName: "member5"}, left}
	})
	var got []string
	for _, s := range Of(r).Stages {
		for _, c := range s.Clusters {
			got = append(got, s.Name+"/"+c.Name+"="+string(c.State)+c.Message)
		}
	}
	want := []string{"staging/member2=Succeeded", "canary/member3=Updating", "canary/member1=Failedthe binding is not up-to-date",
		"canary/member5=Pending", "canary/member6=Skippedleft", fleet.UpdateRunDeleteStageName + "/member4=Pending"}
	if !slices.Equal(got, want) {
		t.Errorf("clusters\n got %q\nwant %q", got, want)
	}
}

// A stage waiting for a RolloutWindow says which one and when it opens,
// whether it has not started (its approval given) or stopped mid-way.
func TestWaitingForAWindowSaysWhichAndWhenItOpens(t *testing.T) {
	const msg = "waiting for window prod/holidays (opens 2027-01-04T23:00:00Z)"
	windowWait := stageWait
	windowWait.Message = msg
	for name, stage := range map[string]fleet.StageUpdatingStatus{
		"approved, not started": {StageName: "canary", Clusters: []fleet.ClusterUpdatingStatus{{ClusterName: "member3"}},
			BeforeStageTaskStatus: []fleet.StageTaskStatus{approval("web-before-canary", created, approvedC)},
			Conditions:            []metav1.Condition{windowWait}},
		"mid-stage": {StageName: "canary", Clusters: []fleet.ClusterUpdatingStatus{done("member3"), {ClusterName: "member1"}},
			Conditions: []metav1.Condition{windowWait}},
	} {
		r := &fleet.UpdateRun{ObjectMeta: metav1.ObjectMeta{Name: "web", Generation: 1},
			Spec: fleet.UpdateRunSpec{State: fleet.StateRun},
			Status: fleet.UpdateRunStatus{StagesStatus: []fleet.StageUpdatingStatus{stage},
				Conditions: []metav1.Condition{initialized, progressing(metav1.ConditionFalse, fleet.UpdateRunWaitingReason)}}}
		v := Of(r)
		if v.Waiting.For != WaitWindow || v.Waiting.String() != msg {
			t.Errorf("%s: waiting %+v, %q; want %q", name, v.Waiting, v.Waiting.String(), msg)
		}
		if got := v.Stage().State; got != StageWaiting {
			t.Errorf("%s: stage state %s, want %s", name, got, StageWaiting)
		}
	}
}
