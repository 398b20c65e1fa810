package embedded

import (
	"reflect"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	fleet "github.com/gitfleet/gitfleet/api/v1beta1"
)

func TestSameRunStatusSeesWhatDeepEqualSees(t *testing.T) {
	t0 := metav1.NewTime(time.Date(2026, 1, 9, 1, 49, 6, 0, time.UTC))
	cond := func(msg string) metav1.Condition {
		return metav1.Condition{Type: "Started", Status: "True", Reason: "Started", Message: msg, LastTransitionTime: t0}
	}
	base := func() *fleet.UpdateRunStatus {
		return &fleet.UpdateRunStatus{
			PolicySnapshotIndexUsed: "0",
			StagesStatus: []fleet.StageUpdatingStatus{
				{StageName: "canary", Clusters: []fleet.ClusterUpdatingStatus{{ClusterName: "m1", Conditions: []metav1.Condition{cond("a")}}}, StartTime: &t0},
				{StageName: "prod", Clusters: []fleet.ClusterUpdatingStatus{{ClusterName: "m2"}, {ClusterName: "m3"}}},
			},
			DeletionStageStatus: &fleet.StageUpdatingStatus{StageName: "kubernetes-fleet.io/deleteStage", Clusters: []fleet.ClusterUpdatingStatus{}},
			Conditions:          []metav1.Condition{cond("run")},
		}
	}
	for name, change := range map[string]func(s *fleet.UpdateRunStatus){
		"nothing":               func(*fleet.UpdateRunStatus) {},
		"a cluster's condition": func(s *fleet.UpdateRunStatus) { s.StagesStatus[0].Clusters[0].Conditions[0].Message = "b" },
		"a cluster more": func(s *fleet.UpdateRunStatus) {
			s.StagesStatus[1].Clusters = append(s.StagesStatus[1].Clusters, fleet.ClusterUpdatingStatus{})
		},
		"a stage's clusters nil":          func(s *fleet.UpdateRunStatus) { s.StagesStatus[1].Clusters = nil },
		"the deletion stage's clusters":   func(s *fleet.UpdateRunStatus) { s.DeletionStageStatus.Clusters = nil },
		"no deletion stage":               func(s *fleet.UpdateRunStatus) { s.DeletionStageStatus = nil },
		"a stage's end":                   func(s *fleet.UpdateRunStatus) { s.StagesStatus[0].EndTime = &t0 },
		"a stage less":                    func(s *fleet.UpdateRunStatus) { s.StagesStatus = s.StagesStatus[:1] },
		"the run's condition":             func(s *fleet.UpdateRunStatus) { s.Conditions[0].Reason = "Other" },
		"the policy snapshot":             func(s *fleet.UpdateRunStatus) { s.PolicySnapshotIndexUsed = "1" },
		"the deletion stage's start time": func(s *fleet.UpdateRunStatus) { s.DeletionStageStatus.StartTime = &t0 },
	} {
		t.Run(name, func(t *testing.T) {
			a, b := base(), base()
			change(b)
			want := reflect.DeepEqual(a, b)
			if got := sameRunStatus(a, b); got != want {
				t.Errorf("sameRunStatus = %v, reflect.DeepEqual = %v", got, want)
			}
			if got := sameRunStatus(b, a); got != want {
				t.Errorf("sameRunStatus the other way = %v, reflect.DeepEqual = %v", got, want)
			}
		})
	}
}
