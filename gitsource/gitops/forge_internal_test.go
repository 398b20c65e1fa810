package gitops

import (
	"reflect"
	"strconv"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/intstr"

	fleet "github.com/gitfleet/gitfleet/api/v1beta1"
	"github.com/gitfleet/gitfleet/internal/testing/golden"
	"github.com/gitfleet/gitfleet/reconciler/resourcesnapshot"
)

// snapshot is the master of group index (count snapshots, recorded from
// commit), or its sub-snapshot sub when sub is not "".
func snapshot(index, sub string, count int, commit string, resources ...string) *fleet.ResourceSnapshot {
	s := &fleet.ResourceSnapshot{ObjectMeta: metav1.ObjectMeta{Name: "web-" + index + "-snapshot",
		Labels: map[string]string{fleet.ResourceIndexLabel: index},
		Annotations: map[string]string{fleet.CommitAnnotation: commit, fleet.ResourceGroupHashAnnotation: "h" + index,
			fleet.NumberOfResourceSnapshotsAnnotation: strconv.Itoa(count)},
	}}
	if sub != "" {
		s.Name = "web-" + index + "-" + sub
		s.Annotations = map[string]string{fleet.SubindexOfResourceSnapshotAnnotation: sub}
	}
	for _, r := range resources {
		s.Spec.SelectedResources = append(s.Spec.SelectedResources, runtime.RawExtension{Raw: []byte(r)})
	}
	return s
}

// The per-resource summary between the snapshot clusters have and the one
// they get: added, changed (by value, not by spelling) and removed, sorted
// by kind, namespace and name; a group split into sub-snapshots counts as
// one.
func TestSnapshotDiffListsEachResourceOnce(t *testing.T) {
	snaps := []*fleet.ResourceSnapshot{
		snapshot("0", "", 1, "c0",
			`{"kind":"Namespace","metadata":{"name":"web"}}`,
			`{"kind":"ConfigMap","metadata":{"name":"settings","namespace":"web"},"data":{"color":"blue"}}`,
			`{"kind":"Service","metadata":{"name":"old","namespace":"web"}}`),
		snapshot("1", "", 2, "c1",
			`{"metadata":{"name":"web"},"kind":"Namespace"}`,
			`{"kind":"ConfigMap","metadata":{"name":"settings","namespace":"web"},"data":{"color":"green"}}`),
		snapshot("1", "0", 0, "", `{"kind":"Deployment","metadata":{"name":"web","namespace":"web"}}`),
	}
	groups := resourcesnapshot.Of(snaps)
	from, _ := groups.At(0)
	to, _ := groups.At(1)
	have, err := from.Resources()
	if err != nil {
		t.Fatal(err)
	}
	want, err := to.Resources()
	if err != nil {
		t.Fatal(err)
	}
	if from.Commit() != "c0" || to.Commit() != "c1" {
		t.Errorf("commits %q, %q; want c0, c1 (from the master, not a sub-snapshot)", from.Commit(), to.Commit())
	}
	got := resourcesnapshot.Diff(have, want)
	wantChanges := []resourceChange{
		{Change: "changed", Kind: "ConfigMap", Namespace: "web", Name: "settings"},
		{Change: "added", Kind: "Deployment", Namespace: "web", Name: "web"},
		{Change: "removed", Kind: "Service", Namespace: "web", Name: "old"},
	}
	if len(got) != len(wantChanges) {
		t.Fatalf("changes %v; want %v", got, wantChanges)
	}
	for i := range got {
		if got[i] != wantChanges[i] {
			t.Errorf("change %d = %v; want %v", i, got[i], wantChanges[i])
		}
	}
}

// The approval pull request's title and body, for a before-stage request
// whose clusters are on different snapshots, for the after-stage request
// of the last stage, and for the request that gates the deletion stage.
func TestApprovalPullRequestSaysWhatApprovingReleases(t *testing.T) {
	start := time.Date(2026, 11, 24, 21, 0, 0, 0, time.UTC)
	end := start.Add(3 * time.Minute)
	before := &approvalInfo{
		Request: "web-run-before-prod", Run: "web-run", Placement: "web", Stage: "prod",
		Released:      &stageClusters{Name: "prod", Index: 3, Of: 3, Clusters: []string{"prod-eu", "prod-us", "prod-asia"}},
		SnapshotIndex: "4", Commit: "6dcb09b5b57875f334f61aebed695e2e4193db5e",
		Done: []doneStage{
			{Name: "staging", Clusters: []string{"staging-1"}, Start: &start, End: &end},
			{Name: "canary", Clusters: []string{"canary-1", "canary-2"}, Start: &end},
		},
		Changes: []snapshotChange{
			{Clusters: []string{"prod-eu", "prod-us"}, From: "3", FromCommit: "0123456789abcdef0123456789abcdef01234567",
				Resources: []resourceChange{{Change: "changed", Kind: "ConfigMap", Namespace: "web", Name: "settings"}, {Change: "removed", Kind: "Service", Namespace: "web", Name: "old"}}},
			{Clusters: []string{"prod-asia"}, Resources: []resourceChange{{Change: "added", Kind: "Namespace", Namespace: "", Name: "web"}, {Change: "added", Kind: "ConfigMap", Namespace: "web", Name: "settings"}}},
		},
	}
	after := &approvalInfo{Request: "web-run-after-prod", Run: "web-run", Placement: "web", Stage: "prod", After: true,
		SnapshotIndex: "4", Done: []doneStage{{Name: "prod", Clusters: []string{"prod-eu"}, Start: &start}}}
	deletion := &approvalInfo{Request: "web-run-before-delete-stage", Run: "web-run", Placement: "web", Stage: fleet.UpdateRunDeleteStageName,
		SnapshotIndex: "4", Done: []doneStage{{Name: "prod", Clusters: []string{"prod-eu"}, Start: &start, End: &end}},
		Deletes: []string{"old-1", "old-2"}}
	// A run with a failure policy says what each stage may lose and what
	// it lost (README "When clusters fail").
	budgeted := *before
	budgeted.Request, budgeted.Run = "web-budget-before-prod", "web-budget"
	budgeted.Budget = &failureBudget{MaxWaitMinutes: 10, Stages: []stageBudget{
		{Name: "staging", Budget: "0"}, {Name: "canary", Budget: "1", Failed: []string{"canary-2"}},
		{Name: "prod", Budget: "1 (10% of 3 clusters)"}}}
	// A stage in a window, approved during a freeze (README "Rollout
	// windows and freezes"): merging approves, the stage still waits.
	windowed := *before
	windowed.Request, windowed.Run = "web-frozen-before-prod", "web-frozen"
	windowed.Windows = &stageWindows{Stage: []string{"prod"}, Members: []string{"tokyo-night"},
		Wait: "waiting for window prod/holidays (opens 2027-01-04T23:00:00Z)", At: time.Date(2026, 12, 31, 10, 0, 0, 0, time.UTC)}
	for name, info := range map[string]*approvalInfo{"before-stage": before, "after-last-stage": after, "deletion-stage": deletion,
		"before-stage-with-failure-budget": &budgeted, "before-stage-in-a-freeze": &windowed} {
		golden.Assert(t, "approval-pr/"+name+".md", []byte("# "+info.title()+"\n\n"+info.body()))
	}
}

// Commit status descriptions say where the run is, in one line.
func TestRunStatusSaysWhereTheRunIs(t *testing.T) {
	cond := func(typ string, status metav1.ConditionStatus, reason string) metav1.Condition {
		return metav1.Condition{Type: typ, Status: status, Reason: reason}
	}
	ok := cond(fleet.ClusterUpdatingConditionSucceeded, metav1.ConditionTrue, fleet.ClusterUpdatingSucceededReason)
	started := cond(fleet.ClusterUpdatingConditionStarted, metav1.ConditionTrue, fleet.ClusterUpdatingStartedReason)
	stageDone := cond(fleet.StageUpdatingConditionSucceeded, metav1.ConditionTrue, fleet.StageUpdatingSucceededReason)
	initialized := cond(fleet.StagedUpdateRunConditionInitialized, metav1.ConditionTrue, fleet.UpdateRunInitializeSucceededReason)
	stages := func() []fleet.StageUpdatingStatus {
		return []fleet.StageUpdatingStatus{
			{StageName: "staging", Conditions: []metav1.Condition{stageDone}, Clusters: []fleet.ClusterUpdatingStatus{{ClusterName: "s1", Conditions: []metav1.Condition{started, ok}}}},
			{StageName: "canary", Clusters: []fleet.ClusterUpdatingStatus{{ClusterName: "c1", Conditions: []metav1.Condition{started, ok}}, {ClusterName: "c2", Conditions: []metav1.Condition{started}}},
				AfterStageTaskStatus: []fleet.StageTaskStatus{{Type: fleet.StageTaskTypeApproval, ApprovalRequestName: "web-after-canary"}}},
			{StageName: "prod", Clusters: []fleet.ClusterUpdatingStatus{{ClusterName: "p1"}}},
		}
	}
	for _, tc := range []struct {
		name      string
		conds     []metav1.Condition
		edit      func([]fleet.StageUpdatingStatus)
		deletion  *fleet.StageUpdatingStatus
		state     string
		desc      string
		namespace string
	}{
		{name: "progressing", conds: []metav1.Condition{initialized, cond(fleet.StagedUpdateRunConditionProgressing, metav1.ConditionTrue, fleet.UpdateRunProgressingReason)},
			state: "pending", desc: "stage 2/3 canary: 1 of 2 clusters"},
		{name: "waiting for an approval", conds: []metav1.Condition{initialized, cond(fleet.StagedUpdateRunConditionProgressing, metav1.ConditionFalse, fleet.UpdateRunWaitingReason)},
			edit: func(s []fleet.StageUpdatingStatus) {
				s[1].Clusters[1].Conditions = append(s[1].Clusters[1].Conditions, ok)
			},
			state: "pending", desc: "stage 2/3 canary: 2 of 2 clusters, waiting for approval web-after-canary"},
		// An approval and a timed wait after a stage run side by side:
		// the approval is named, whatever the tasks' order.
		{name: "waiting for an approval beside a timed wait", conds: []metav1.Condition{initialized, cond(fleet.StagedUpdateRunConditionProgressing, metav1.ConditionFalse, fleet.UpdateRunWaitingReason)},
			edit: func(s []fleet.StageUpdatingStatus) {
				s[1].Clusters[1].Conditions = append(s[1].Clusters[1].Conditions, ok)
				s[1].AfterStageTaskStatus = append([]fleet.StageTaskStatus{{Type: fleet.StageTaskTypeTimedWait}}, s[1].AfterStageTaskStatus...)
			},
			state: "pending", desc: "stage 2/3 canary: 2 of 2 clusters, waiting for approval web-after-canary"},
		{name: "deletion stage", conds: []metav1.Condition{initialized, cond(fleet.StagedUpdateRunConditionProgressing, metav1.ConditionTrue, fleet.UpdateRunProgressingReason)},
			edit: func(s []fleet.StageUpdatingStatus) {
				for i := range s {
					s[i].Conditions = []metav1.Condition{stageDone}
				}
			},
			deletion: &fleet.StageUpdatingStatus{StageName: fleet.UpdateRunDeleteStageName, Clusters: []fleet.ClusterUpdatingStatus{{ClusterName: "old", Conditions: []metav1.Condition{started}}},
				Conditions: []metav1.Condition{cond(fleet.StageUpdatingConditionProgressing, metav1.ConditionTrue, fleet.StageUpdatingStartedReason)}},
			state: "pending", desc: "deletion stage: 0 of 1 clusters"},
		{name: "succeeded", conds: []metav1.Condition{initialized, cond(fleet.StagedUpdateRunConditionSucceeded, metav1.ConditionTrue, fleet.UpdateRunSucceededReason)},
			edit: func(s []fleet.StageUpdatingStatus) {
				for i := range s {
					s[i].Conditions = []metav1.Condition{stageDone}
				}
			},
			state: "success", desc: "succeeded: stage 3/3 prod: 0 of 1 clusters"},
		{name: "partially succeeded", conds: []metav1.Condition{initialized, cond(fleet.StagedUpdateRunConditionSucceeded, metav1.ConditionTrue, fleet.UpdateRunPartiallySucceededReason)},
			edit: func(s []fleet.StageUpdatingStatus) {
				for i := range s {
					s[i].Conditions = []metav1.Condition{stageDone}
				}
			},
			state: "success", desc: "partially succeeded: stage 3/3 prod: 0 of 1 clusters"},
		{name: "failed", conds: []metav1.Condition{initialized, cond(fleet.StagedUpdateRunConditionSucceeded, metav1.ConditionFalse, fleet.UpdateRunFailedReason)},
			state: "failure", desc: "failed in stage 2/3 canary: 1 of 2 clusters"},
		{name: "namespaced", namespace: "team-a", conds: []metav1.Condition{initialized, cond(fleet.StagedUpdateRunConditionProgressing, metav1.ConditionTrue, fleet.UpdateRunStuckReason)},
			state: "pending", desc: "stage 2/3 canary: 1 of 2 clusters, stuck"},
		{name: "not initialized", state: "pending", desc: "initializing"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			run := &fleet.UpdateRun{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: tc.namespace}}
			run.Status.Conditions = tc.conds
			if tc.conds != nil {
				run.Status.StagesStatus = stages()
			}
			if tc.edit != nil {
				tc.edit(run.Status.StagesStatus)
			}
			run.Status.DeletionStageStatus = tc.deletion
			st := RunStatus(run)
			wantCtx := "gitfleet/web"
			if tc.namespace != "" {
				wantCtx = "gitfleet/team-a/web"
			}
			if string(st.State) != tc.state || st.Description != tc.desc || st.Context != wantCtx {
				t.Errorf("status = %s %q %q; want %s %q %q", st.State, st.Context, st.Description, tc.state, wantCtx, tc.desc)
			}
		})
	}
}

// The commit status of a commit that does not render is a failure whose
// description leads with the file (and line) of the error, in one line
// that fits the forge's 140 characters.
func TestRefusedStatusNamesTheFileFirst(t *testing.T) {
	kustomize := "render: kustomization.yaml: kustomize build failed: accumulating resources: accumulation err='accumulating resources from " +
		"'missing.yaml': 'missing.yaml' doesn't exist': must build at directory: not a valid directory: 'missing.yaml' doesn't exist"
	for _, tc := range []struct {
		name, reason, message, desc string
	}{
		{"a kustomize error, cut at 140 characters", fleet.RenderFailedReason, kustomize,
			"does not render: kustomization.yaml: kustomize build failed: accumulating resources: accumulation err='accumulating resources from 'missing…"},
		{"a file and line", fleet.RenderFailedReason, "a.yaml:3: ConfigMap test-namespace/test-cm: defined twice, also at b.yaml:1",
			"does not render: a.yaml:3: ConfigMap test-namespace/test-cm: defined twice, also at b.yaml:1"},
		{"several lines", fleet.RenderFailedReason, "render: a.yaml:2: yaml: found character that cannot start any token\n  b.yaml:1: missing kind",
			"does not render: a.yaml:2: yaml: found character that cannot start any token b.yaml:1: missing kind"},
		{"a render past the time limit", fleet.RenderTimedOutReason, "render timed out after 1m0s (--render-timeout)",
			"does not render: render timed out after 1m0s (--render-timeout)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rec := &fleet.Commit{ObjectMeta: metav1.ObjectMeta{Name: "0c4d11f2e1a567da9a1ee3a00c4d11f2e1a567da"},
				Status: fleet.CommitStatus{Conditions: []metav1.Condition{{Type: fleet.CommitConditionRendered, Status: metav1.ConditionFalse,
					Reason: tc.reason, Message: tc.message}}}}
			st := RefusedStatus(rec)
			if st.Context != "gitfleet" || st.State != "failure" || st.Description != tc.desc {
				t.Errorf("status = %s %q %q; want failure %q %q", st.State, st.Context, st.Description, "gitfleet", tc.desc)
			}
			if n := len([]rune(st.Description)); n > 140 {
				t.Errorf("description of %d characters", n)
			}
		})
	}
}

// The approval body's budget comes from the run: each stage's own
// maxAllowedClusterFailures, else the run's, resolved on the stage's
// clusters, and its clusters whose Succeeded is False; none without a
// failure policy.
func TestFailureBudgetOfARun(t *testing.T) {
	failed := metav1.Condition{Type: fleet.ClusterUpdatingConditionSucceeded, Status: metav1.ConditionFalse, Reason: fleet.ClusterUpdatingFailedReason}
	tenPercent, zero := intstr.FromString("10%"), intstr.FromInt32(0)
	run := &fleet.UpdateRun{Status: fleet.UpdateRunStatus{
		StagedUpdateStrategySnapshot: &fleet.UpdateStrategySpec{Stages: []fleet.StageConfig{{Name: "canary", MaxAllowedClusterFailures: &zero}, {Name: "prod"}}},
		StagesStatus: []fleet.StageUpdatingStatus{
			{StageName: "canary", Clusters: []fleet.ClusterUpdatingStatus{{ClusterName: "c1"}}},
			{StageName: "prod", Clusters: []fleet.ClusterUpdatingStatus{{ClusterName: "p1", Conditions: []metav1.Condition{failed}}, {ClusterName: "p2"}, {ClusterName: "p3"}}},
		}}}
	if fb := failureBudgetOf(run); fb != nil {
		t.Errorf("a run without a failure policy has a budget: %+v", fb)
	}
	run.Spec.FailurePolicy = &fleet.FailurePolicy{MaxAllowedClusterFailures: &tenPercent}
	fb := failureBudgetOf(run)
	want := &failureBudget{MaxWaitMinutes: 5, Stages: []stageBudget{{Name: "canary", Budget: "0"}, {Name: "prod", Budget: "1 (10% of 3 clusters)", Failed: []string{"p1"}}}}
	if !reflect.DeepEqual(fb, want) {
		t.Errorf("budget %+v, want %+v", fb, want)
	}
}
