package printers

import (
	"io"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	fleet "github.com/gitfleet/gitfleet/api/v1beta1"
)

// The tables below are copied from the seeds' kubectl output; gitfleet's
// tables must reproduce them byte for byte from equivalent objects.
func TestTablesReproduceTheSeedsKubectlOutput(t *testing.T) {
	ago := func(d time.Duration) metav1.ObjectMeta {
		return metav1.ObjectMeta{Generation: 1, CreationTimestamp: metav1.NewTime(now.Add(-d))}
	}
	initFailed := &fleet.UpdateRun{ObjectMeta: ago(4 * time.Second),
		Spec: fleet.UpdateRunSpec{PlacementName: "example-placement", ResourceSnapshotIndex: "1"},
		Status: fleet.UpdateRunStatus{PolicySnapshotIndexUsed: "0", Conditions: []metav1.Condition{
			{Type: "Initialized", Status: "False", Reason: fleet.UpdateRunInitializeFailedReason}}}}
	initFailed.Name = "example-run"

	approved := func(name, run, stage string, age time.Duration, ok bool) *fleet.ApprovalRequest {
		a := &fleet.ApprovalRequest{ObjectMeta: ago(age), Spec: fleet.ApprovalRequestSpec{TargetUpdateRun: run, TargetStage: stage}}
		a.Name = name
		if ok {
			a.Status.Conditions = []metav1.Condition{{Type: "Approved", Status: "True"}, {Type: "ApprovalAccepted", Status: "True"}}
		}
		return a
	}
	nsApproval := approved("web-app-rollout-before-dev", "web-app-rollout", "dev", 92*time.Second, true)
	nsApproval.Namespace = "my-app-namespace"

	scheduled := &fleet.Placement{ObjectMeta: ago(51 * time.Second), Status: fleet.PlacementStatus{Conditions: []metav1.Condition{
		{Type: "ClusterResourcePlacementScheduled", Status: "True", ObservedGeneration: 1}}}}
	scheduled.Name = "example-placement"

	bindingAt := func(name string, ready bool) *fleet.Binding {
		b := &fleet.Binding{ObjectMeta: ago(51 * time.Minute)}
		b.Name = name
		if ready {
			b.Status.Conditions = []metav1.Condition{{Type: "WorkSynchronized", Status: "True"}, {Type: "Applied", Status: "True"}}
		}
		return b
	}

	cases := []struct {
		seed  string
		print func(io.Writer) error
		want  string
	}{
		{"001: initialization failure", func(w io.Writer) error { return Runs(w, []*fleet.UpdateRun{initFailed}, now, Options{}) },
			"NAME          PLACEMENT           RESOURCE-SNAPSHOT-INDEX   POLICY-SNAPSHOT-INDEX   INITIALIZED   PROGRESSING   SUCCEEDED   AGE\n" +
				"example-run   example-placement   1                         0                       False                                   4s\n"},
		{"001: namespaced approval requests", func(w io.Writer) error {
			return Approvals(w, []*fleet.ApprovalRequest{nsApproval}, now, Options{})
		},
			"NAME                         UPDATE-RUN        STAGE   APPROVED   AGE\n" +
				"web-app-rollout-before-dev   web-app-rollout   dev     True       92s\n"},
		{"003: approvals with APPROVALACCEPTED (-o wide)", func(w io.Writer) error {
			return Approvals(w, []*fleet.ApprovalRequest{
				approved("example-run-canary", "example-run", "canary", 14*time.Minute, true),
				approved("example-run-2-canary", "example-run-2", "canary", 75*time.Second, false),
			}, now, Options{Wide: true})
		},
			"NAME                   UPDATE-RUN      STAGE    APPROVED   APPROVALACCEPTED   AGE\n" +
				"example-run-2-canary   example-run-2   canary                                 75s\n" +
				"example-run-canary     example-run     canary   True       True               14m\n"},
		{"003: scheduled placement", func(w io.Writer) error { return Placements(w, []*fleet.Placement{scheduled}, now, Options{}) },
			"NAME                GEN   SCHEDULED   SCHEDULED-GEN   AVAILABLE   AVAILABLE-GEN   AGE\n" +
				"example-placement   1     True        1                                           51s\n"},
		{"002: bindings", func(w io.Writer) error {
			return Bindings(w, []*fleet.Binding{bindingAt("example-placement-member2-fc081413", false), bindingAt("example-placement-member1-2afc7d7f", true)}, now, Options{})
		},
			"NAME                                 WORKSYNCHRONIZED   RESOURCESAPPLIED   AGE\n" +
				"example-placement-member1-2afc7d7f   True               True               51m\n" +
				"example-placement-member2-fc081413                                         51m\n"},
	}
	for _, tc := range cases {
		t.Run(tc.seed, func(t *testing.T) {
			if got := string(render(t, tc.print)); got != tc.want {
				t.Errorf("got\n%s\nwant (seed)\n%s", got, tc.want)
			}
		})
	}
}

// Seed 001's `kubectl describe csur` shows the initialization failure like
// this; the lines from "Applied Strategy:" on are copied from it.
func TestDescribeReproducesTheSeedsDescribeOutput(t *testing.T) {
	r := &fleet.UpdateRun{ObjectMeta: metav1.ObjectMeta{Name: "example-run", Generation: 1},
		Status: fleet.UpdateRunStatus{
			AppliedStrategy: &fleet.ApplyStrategy{Type: fleet.ApplyStrategyTypeClientSideApply, ComparisonOption: fleet.ComparisonOptionTypePartialComparison,
				WhenToApply: fleet.WhenToApplyTypeAlways, WhenToTakeOver: fleet.WhenToTakeOverTypeAlways},
			Conditions: []metav1.Condition{{Type: "Initialized", Status: "False", ObservedGeneration: 1, Reason: fleet.UpdateRunInitializeFailedReason,
				LastTransitionTime: metav1.NewTime(time.Date(2026, 1, 8, 0, 35, 9, 0, time.UTC)),
				Message:            "cannot continue the updateRun: failed to validate the updateRun: failed to process the request due to a client error: no resourceSnapshots with index `1` found for placement `/example-placement`"}},
			DeletionStageStatus:        &fleet.StageUpdatingStatus{StageName: fleet.UpdateRunDeleteStageName, Clusters: []fleet.ClusterUpdatingStatus{}},
			PolicyObservedClusterCount: 2,
			PolicySnapshotIndexUsed:    "0",
		}}
	want := `Status:
  Applied Strategy:
    Comparison Option:  PartialComparison
    Type:               ClientSideApply
    When To Apply:      Always
    When To Take Over:  Always
  Conditions:
    Last Transition Time:  2026-01-08T00:35:09Z
    Message:               cannot continue the updateRun: failed to validate the updateRun: failed to process the request due to a client error: no resourceSnapshots with index ` + "`1`" + ` found for placement ` + "`/example-placement`" + `
    Observed Generation:   1
    Reason:                UpdateRunInitializedFailed
    Status:                False
    Type:                  Initialized
  Deletion Stage Status:
    Clusters:
    Stage Name:                   kubernetes-fleet.io/deleteStage
  Policy Observed Cluster Count:  2
  Policy Snapshot Index Used:     0
`
	got := string(render(t, func(w io.Writer) error { return DescribeRun(w, r, now) }))
	i := len(got) - len(want)
	if i < 0 || got[i:] != want {
		t.Errorf("describe does not end like the seed:\n%s", got)
	}
}
