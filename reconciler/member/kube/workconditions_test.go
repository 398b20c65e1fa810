package kube_test

import (
	"testing"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	fleet "github.com/gitfleet/gitfleet/api/v1beta1"
	"github.com/gitfleet/gitfleet/reconciler/member/kube"
)

// A Work's own conditions follow from its manifests' as KubeFleet's work
// applier sets them: Available only once every manifest is applied, the
// counts in the messages, DiffReported alone under ReportDiff.
func TestAWorksConditionsFollowFromItsManifests(t *testing.T) {
	c := func(typ string, s metav1.ConditionStatus) metav1.Condition {
		return metav1.Condition{Type: typ, Status: s, Reason: "r", ObservedGeneration: 3}
	}
	const (
		applied, available, diff = fleet.WorkConditionTypeApplied, fleet.WorkConditionTypeAvailable, fleet.WorkConditionTypeDiffReported
		yes, no                  = metav1.ConditionTrue, metav1.ConditionFalse
	)
	type want struct{ typ, reason, message string }
	for _, tc := range []struct {
		name       string
		manifests  [][]metav1.Condition
		reportDiff bool
		want       []want
	}{
		{"all applied and available", [][]metav1.Condition{{c(applied, yes), c(available, yes)}, {c(applied, yes), c(available, yes)}}, false,
			[]want{{applied, kube.WorkAllManifestsAppliedReason, kube.AllManifestsAppliedMessage},
				{available, kube.WorkAllManifestsAvailableReason, kube.AllAppliedObjectAvailableMessage}}},
		{"one not available yet", [][]metav1.Condition{{c(applied, yes), c(available, yes)}, {c(applied, yes), c(available, no)}}, false,
			[]want{{applied, kube.WorkAllManifestsAppliedReason, kube.AllManifestsAppliedMessage},
				{available, kube.WorkNotAllManifestsAvailableReason, "Some manifests are not available (1 of 2 manifests are available)"}}},
		{"one refused, one not tried: no availability", [][]metav1.Condition{{c(applied, yes)}, {c(applied, no)}, {}}, false,
			[]want{{applied, kube.WorkNotAllManifestsAppliedReason, "Failed to apply all manifests (1 of 3 manifests are applied)"}}},
		{"diff reported", [][]metav1.Condition{{c(diff, yes)}, {c(diff, yes)}}, true,
			[]want{{diff, kube.WorkAllManifestsDiffReportedReason, kube.AllManifestsHaveReportedDiffMessage}}},
		{"diff not reported on one", [][]metav1.Condition{{c(diff, yes)}, {}}, true,
			[]want{{diff, kube.WorkNotAllManifestsDiffReportedReason, "Failed to report diff on all manifests (1 of 2 manifests have reported diff)"}}},
		{"no manifests", nil, false,
			[]want{{applied, kube.WorkAllManifestsAppliedReason, kube.AllManifestsAppliedMessage},
				{available, kube.WorkAllManifestsAvailableReason, kube.AllAppliedObjectAvailableMessage}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			// Conditions of an earlier pass that no longer hold go.
			st := fleet.WorkStatus{Conditions: []metav1.Condition{c(applied, yes), c(available, yes), c(diff, yes)}}
			for _, conds := range tc.manifests {
				st.ManifestConditions = append(st.ManifestConditions, fleet.ManifestCondition{Conditions: conds})
			}
			kube.SetWorkConditions(&st, tc.reportDiff, 4)
			if len(st.Conditions) != len(tc.want) {
				t.Fatalf("conditions = %+v, want %+v", st.Conditions, tc.want)
			}
			for _, w := range tc.want {
				got := meta.FindStatusCondition(st.Conditions, w.typ)
				if got == nil || got.Reason != w.reason || got.Message != w.message || got.ObservedGeneration != 4 ||
					(got.Status == yes) != (w.reason == kube.WorkAllManifestsAppliedReason || w.reason == kube.WorkAllManifestsAvailableReason ||
						w.reason == kube.WorkAllManifestsDiffReportedReason) {
					t.Errorf("%s = %+v, want %+v", w.typ, got, w)
				}
			}
		})
	}
}
