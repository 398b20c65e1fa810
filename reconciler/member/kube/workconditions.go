package kube

import (
	"fmt"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	fleet "github.com/gitfleet/gitfleet/api/v1beta1"
)

// SetWorkConditions derives a Work's own conditions at generation gen from
// its manifests' conditions in st, as KubeFleet's work applier does
// (setWorkAppliedCondition, setWorkAvailableCondition,
// setWorkDiffReportedCondition): under ReportDiff only DiffReported, True
// when every manifest reported its diff; otherwise Applied, True when
// every manifest is applied, and, only then, Available, True when every
// manifest is available. The counts in the False messages are the
// manifests'. Every applier of Works (WorkApplier, the agent's simulated
// member) builds its manifest conditions and leaves the Work's to this.
func SetWorkConditions(st *fleet.WorkStatus, reportDiff bool, gen int64) {
	n := len(st.ManifestConditions)
	count := func(t string) int {
		k := 0
		for _, mc := range st.ManifestConditions {
			if c := meta.FindStatusCondition(mc.Conditions, t); c != nil && c.Status == metav1.ConditionTrue {
				k++
			}
		}
		return k
	}
	set := func(t string, ok bool, okReason, okMsg, failReason, failMsg string) {
		c := metav1.Condition{Type: t, Status: metav1.ConditionTrue, Reason: okReason, Message: okMsg, ObservedGeneration: gen}
		if !ok {
			c.Status, c.Reason, c.Message = metav1.ConditionFalse, failReason, failMsg
		}
		meta.SetStatusCondition(&st.Conditions, c)
	}
	if reportDiff {
		meta.RemoveStatusCondition(&st.Conditions, fleet.WorkConditionTypeApplied)
		meta.RemoveStatusCondition(&st.Conditions, fleet.WorkConditionTypeAvailable)
		diffed := count(fleet.WorkConditionTypeDiffReported)
		set(fleet.WorkConditionTypeDiffReported, diffed == n, WorkAllManifestsDiffReportedReason, AllManifestsHaveReportedDiffMessage,
			WorkNotAllManifestsDiffReportedReason, fmt.Sprintf(NotAllManifestsHaveReportedDiffMessage, diffed, n))
		return
	}
	meta.RemoveStatusCondition(&st.Conditions, fleet.WorkConditionTypeDiffReported)
	applied := count(fleet.WorkConditionTypeApplied)
	set(fleet.WorkConditionTypeApplied, applied == n, WorkAllManifestsAppliedReason, AllManifestsAppliedMessage,
		WorkNotAllManifestsAppliedReason, fmt.Sprintf(NotAllManifestsAppliedMessage, applied, n))
	if applied < n {
		// KubeFleet reports availability only of an applied Work.
		meta.RemoveStatusCondition(&st.Conditions, fleet.WorkConditionTypeAvailable)
		return
	}
	available := count(fleet.WorkConditionTypeAvailable)
	set(fleet.WorkConditionTypeAvailable, available == n, WorkAllManifestsAvailableReason, AllAppliedObjectAvailableMessage,
		WorkNotAllManifestsAvailableReason, fmt.Sprintf(NotAllAppliedObjectsAvailableMessage, available, n))
}
