package member

import (
	"fmt"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	fleet "github.com/gitfleet/gitfleet/api/v1beta1"
	"github.com/gitfleet/gitfleet/internal/condmsg"
)

// Binding condition reasons and messages, as KubeFleet's work generator
// writes them (pkg/utils/condition, pkg/controllers/workgenerator), so a
// binding delivered by gitfleet reads like one delivered by KubeFleet.
const (
	OverrideNotSpecifiedReason  = "NoOverrideSpecified"
	OverrideNotSpecifiedMessage = "No override rules are configured for the selected resources"
	OverriddenSucceededReason   = "OverriddenSucceeded"
	OverriddenSucceededMessage  = "Successfully applied the override rules on the resources"
	OverriddenFailedReason      = "OverriddenFailed"
	// OverriddenFailedMessagePrefix starts the message of Overridden=False;
	// the failure follows.
	OverriddenFailedMessagePrefix = "Failed to apply the override rules on the resources: "

	AllWorkSyncedReason  = "AllWorkSynced"
	AllWorkSyncedMessage = "All of the works are synchronized to the latest"

	AllWorkAppliedReason  = "AllWorkHaveBeenApplied"
	AllWorkAppliedMessage = "All corresponding work objects are applied"

	// WorkNotAppliedReason: the work could not be applied. When gitfleet
	// could not reach the member at all, the message starts with
	// KubeFleet's "Work object <work> is not applied" and says why.
	WorkNotAppliedReason = "NotAllWorkHaveBeenApplied"

	AllWorkAvailableReason  = "AllWorkAreAvailable"
	AllWorkAvailableMessage = "All corresponding work objects are available"
	WorkNotAvailableReason  = "NotAllWorkAreAvailable"
	// WorkNotAvailableMessageFmt takes the work name.
	WorkNotAvailableMessageFmt = "Work object %s is not yet available"

	// WorkFailedToApplyMessageFmt takes the work name: the member refused
	// a manifest, or the apply strategy held objects back (drifts,
	// takeover). A Work that failed as a whole, no manifest naming it,
	// adds ": <cause>" (reconciler/delivery.Status).
	WorkFailedToApplyMessageFmt = "Work object %s has failed to apply"

	AllWorkDiffReportedReason  = "AllWorkHaveDiffReported"
	AllWorkDiffReportedMessage = "All corresponding work objects have reported diff"
	WorkNotDiffReportedReason  = "NotAllWorkHaveDiffReported"
	// WorkDiffReportFailedMessageFmt takes the work name.
	WorkDiffReportFailedMessageFmt = "Work object %s has failed to report diff"

	// ManifestNotAvailableYetReason is the work applier's per-resource
	// reason, shown in failedPlacements.
	ManifestNotAvailableYetReason  = "ManifestNotAvailableYet"
	ManifestNotAvailableYetMessage = "Manifest is not yet available; Fleet will check again later"
	// ManifestApplyFailedReason is the work applier's per-resource reason
	// for a manifest the member API server refused (KubeFleet's
	// ApplyOrReportDiffResTypeFailedToApply).
	ManifestApplyFailedReason = "ManifestApplyFailed"

	// gitfleet's own reasons for members it cannot deliver to.
	DriverNotConfiguredReason = "DriverNotConfigured"
	// NoKubeconfigReason: a kubeconfig:<context> member, but serve was
	// given no kubeconfig.
	NoKubeconfigReason = "NoKubeconfig"
	// InvalidSimulationReason: a simulated member's annotations do not parse.
	InvalidSimulationReason = "InvalidSimulation"
)

// maxFailedPlacements bounds failedPlacements as KubeFleet does
// (maxFailedResourcePlacementLimit).
const maxFailedPlacements = 100

func condition(t string, s metav1.ConditionStatus, reason, message string, gen int64) metav1.Condition {
	return metav1.Condition{Type: t, Status: s, Reason: reason, Message: message, ObservedGeneration: gen}
}

// overridden is Overridden=True for a binding whose overrides applied:
// NoOverrideSpecified when it names no override snapshot (KubeFleet's work
// generator).
func overridden(b *fleet.Binding) metav1.Condition {
	if len(b.Spec.ClusterResourceOverrideSnapshots) == 0 && len(b.Spec.ResourceOverrideSnapshots) == 0 {
		return condition(fleet.ResourceBindingOverridden, metav1.ConditionTrue, OverrideNotSpecifiedReason, OverrideNotSpecifiedMessage, b.Generation)
	}
	return condition(fleet.ResourceBindingOverridden, metav1.ConditionTrue, OverriddenSucceededReason, OverriddenSucceededMessage, b.Generation)
}

// NotSynchronized is WorkSynchronized=False: the binding's manifests could
// not be made (a snapshot gone or unreadable), and nothing was delivered.
// why is capped (condmsg).
func NotSynchronized(b *fleet.Binding, why string) metav1.Condition {
	return condition(fleet.ResourceBindingWorkSynchronized, metav1.ConditionFalse, fleet.SyncWorkFailedReason,
		"Failed to synchronize the work to the latest: "+condmsg.Cap(why), b.Generation)
}

// NotOverridden is Overridden=False: applying the binding's overrides
// failed with why (capped: condmsg), and nothing of the binding was
// delivered.
func NotOverridden(b *fleet.Binding, why string) metav1.Condition {
	return condition(fleet.ResourceBindingOverridden, metav1.ConditionFalse, OverriddenFailedReason, OverriddenFailedMessagePrefix+condmsg.Cap(why), b.Generation)
}

func workSynchronized(gen int64) metav1.Condition {
	return condition(fleet.ResourceBindingWorkSynchronized, metav1.ConditionTrue, AllWorkSyncedReason, AllWorkSyncedMessage, gen)
}

func applied(gen int64) metav1.Condition {
	return condition(fleet.ResourceBindingApplied, metav1.ConditionTrue, AllWorkAppliedReason, AllWorkAppliedMessage, gen)
}

func notApplied(gen int64, reason, message string) metav1.Condition {
	return condition(fleet.ResourceBindingApplied, metav1.ConditionFalse, reason, message, gen)
}

func available(gen int64) metav1.Condition {
	return condition(fleet.ResourceBindingAvailable, metav1.ConditionTrue, AllWorkAvailableReason, AllWorkAvailableMessage, gen)
}

func notAvailable(gen int64, work string) metav1.Condition {
	return condition(fleet.ResourceBindingAvailable, metav1.ConditionFalse, WorkNotAvailableReason,
		fmt.Sprintf(WorkNotAvailableMessageFmt, work), gen)
}

// notYetAvailable is the in-progress form: ResourceNotAvailableYet is one of
// the reasons the engine treats as "still rolling out" rather than failed.
func notYetAvailable(gen int64, work string) metav1.Condition {
	return condition(fleet.ResourceBindingAvailable, metav1.ConditionFalse, fleet.ResourceNotAvailableYetReason,
		fmt.Sprintf(WorkNotAvailableMessageFmt, work), gen)
}

func diffReported(gen int64) metav1.Condition {
	return condition(fleet.ResourceBindingDiffReported, metav1.ConditionTrue, AllWorkDiffReportedReason, AllWorkDiffReportedMessage, gen)
}

// Overridden, WorkSynchronized, Applied, Available and NotYetAvailable
// are binding conditions, with KubeFleet's reasons and messages.
func Overridden(b *fleet.Binding) metav1.Condition { return overridden(b) }
func WorkSynchronized(gen int64) metav1.Condition  { return workSynchronized(gen) }
func Applied(gen int64) metav1.Condition           { return applied(gen) }
func Available(gen int64) metav1.Condition         { return available(gen) }
func NotYetAvailable(gen int64, work string) metav1.Condition {
	return notYetAvailable(gen, work)
}

// NotDiffReported is DiffReported=False: the diff of work could not be
// computed.
func NotDiffReported(gen int64, work string) metav1.Condition {
	return condition(fleet.ResourceBindingDiffReported, metav1.ConditionFalse, WorkNotDiffReportedReason,
		fmt.Sprintf(WorkDiffReportFailedMessageFmt, work), gen)
}

// FailedPlacement is one entry of failedPlacements: u is not available (or
// not applied) for reason and message (capped: condmsg; a binding holds
// up to 100 of them).
func FailedPlacement(u *unstructured.Unstructured, condType, reason, message string, gen int64) fleet.FailedResourcePlacement {
	return fleet.FailedResourcePlacement{
		ResourceIdentifier: Identify(u),
		Condition:          condition(condType, metav1.ConditionFalse, reason, condmsg.Cap(message), gen),
	}
}

// MaxFailedPlacements bounds failedPlacements as KubeFleet does.
const MaxFailedPlacements = maxFailedPlacements
