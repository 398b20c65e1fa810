package agent

import (
	"context"
	"encoding/json"
	"fmt"

	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	fleet "github.com/gitfleet/gitfleet/api/v1beta1"
	"github.com/gitfleet/gitfleet/reconciler/hub"
	"github.com/gitfleet/gitfleet/reconciler/member"
)

// The work applier's reasons and messages for a Work's conditions and
// its manifests' conditions, KubeFleet's.
const (
	reasonAllApplied      = "AllManifestsApplied"
	reasonAllAvailable    = "AllManifestsAvailable"
	reasonAllDiffReported = "AllManifestsDiffReported"
	reasonNotAllApplied   = "SomeManifestsAreNotApplied"
	reasonNotAllAvailable = "SomeManifestsAreNotAvailable"
	reasonNotAllDiff      = "SomeManifestsHaveNotReportedDiff"

	messageAllApplied      = "All the specified manifests have been applied"
	messageAllDiffReported = "All the specified manifests have reported diff"
	messageAllAvailable    = "All of the applied manifests are available"
	messageNotAllApplied   = "Failed to apply all manifests (%d of %d manifests are applied)"
	messageNotAllAvailable = "Some manifests are not available (%d of %d manifests are available)"
	messageNotAllDiff      = "Failed to report diff on all manifests (%d of %d manifests have reported diff)"

	// ManifestApplied and the others are the manifests' results.
	reasonManifestApplied     = "Applied"
	messageManifestApplied    = "Manifest has been applied successfully"
	reasonManifestAvailable   = "Available"
	messageManifestAvailable  = "Manifest is available"
	reasonDecodingErred       = "DecodingErred"
	reasonNoDiffFound         = "NoDiffFound"
	messageNoDiffFound        = "No diff has been found between the hub cluster and the member cluster"
	reasonFoundDiff           = "FoundDiff"
	messageFoundDiff          = "Diff has been found between the hub cluster and the member cluster"
	reasonFailedToReportDiff  = "FailedToReportDiff"
	messageFailedToReportDiff = "Failed to report the diff between the hub cluster and the member cluster (error = %s)"
)

var _ member.Reporter = (*Agent)(nil)

// ReportBindingStatus implements member.Reporter: the member's report on
// the delivery of Work key.Name, written to the Work's status as the work
// applier writes it. A report about an older generation of the Work is
// dropped.
func (a *Agent) ReportBindingStatus(key hub.Key, generation int64, conds []metav1.Condition, p member.Placements) error {
	a.mu.Lock()
	d, ctx := a.delivered[key.Name], a.ctx
	a.mu.Unlock()
	if d == nil || d.generation != generation {
		return nil
	}
	obj, ok, err := a.works.GetStore().GetByKey(a.namespace + "/" + key.Name)
	if err != nil || !ok {
		return err
	}
	w := obj.(*unstructured.Unstructured)
	if w.GetGeneration() != generation {
		return nil
	}
	st := currentStatus(w)
	now := metav1.NewTime(a.cfg.Clock.Now())
	failed := map[string]fleet.FailedResourcePlacement{}
	for _, f := range p.Failed {
		failed[idOf(f.ResourceIdentifier)] = f
	}
	diffed := map[string]bool{}
	for _, f := range p.Diffed {
		diffed[idOf(f.ResourceIdentifier)] = true
	}
	find := func(t string) *metav1.Condition { return meta.FindStatusCondition(conds, t) }
	applied, available, diff := find(fleet.ResourceBindingApplied), find(fleet.ResourceBindingAvailable), find(fleet.ResourceBindingDiffReported)

	set := func(list *[]metav1.Condition, t string, s metav1.ConditionStatus, reason, message string) {
		meta.SetStatusCondition(list, metav1.Condition{Type: t, Status: s, Reason: reason, Message: message,
			ObservedGeneration: generation, LastTransitionTime: now})
	}
	old := map[string][]metav1.Condition{}
	for _, mc := range st.ManifestConditions {
		old[workIDOf(mc.Identifier)] = mc.Conditions
	}
	var nApplied, nAvailable, nDiffed int
	manifests := make([]fleet.ManifestCondition, 0, len(d.ids))
	for _, id := range d.ids {
		k := workIDOf(id)
		mc := fleet.ManifestCondition{Identifier: id, Conditions: old[k]}
		f, isFailed := failed[k]
		switch {
		case diff != nil:
			meta.RemoveStatusCondition(&mc.Conditions, fleet.ResourceBindingApplied)
			meta.RemoveStatusCondition(&mc.Conditions, fleet.ResourceBindingAvailable)
			switch {
			case diff.Status != metav1.ConditionTrue:
				set(&mc.Conditions, fleet.ResourceBindingDiffReported, metav1.ConditionFalse, reasonFailedToReportDiff, fmt.Sprintf(messageFailedToReportDiff, diff.Message))
			case diffed[k]:
				set(&mc.Conditions, fleet.ResourceBindingDiffReported, metav1.ConditionTrue, reasonFoundDiff, messageFoundDiff)
				nDiffed++
			default:
				set(&mc.Conditions, fleet.ResourceBindingDiffReported, metav1.ConditionTrue, reasonNoDiffFound, messageNoDiffFound)
				nDiffed++
			}
		case isFailed && f.Condition.Type == fleet.ResourceBindingApplied:
			set(&mc.Conditions, fleet.ResourceBindingApplied, metav1.ConditionFalse, f.Condition.Reason, f.Condition.Message)
			meta.RemoveStatusCondition(&mc.Conditions, fleet.ResourceBindingAvailable)
		case applied == nil || applied.Status != metav1.ConditionTrue:
			// Not applied (the member could not be reached, or the apply
			// failed before this manifest): no result for it yet.
			mc.Conditions = nil
		default:
			set(&mc.Conditions, fleet.ResourceBindingApplied, metav1.ConditionTrue, reasonManifestApplied, messageManifestApplied)
			nApplied++
			if isFailed {
				set(&mc.Conditions, fleet.ResourceBindingAvailable, metav1.ConditionFalse, f.Condition.Reason, f.Condition.Message)
			} else if available != nil && (available.Status == metav1.ConditionTrue || len(p.Failed) > 0) {
				// With failures named, the others are available.
				set(&mc.Conditions, fleet.ResourceBindingAvailable, metav1.ConditionTrue, reasonManifestAvailable, messageManifestAvailable)
				nAvailable++
			} else {
				meta.RemoveStatusCondition(&mc.Conditions, fleet.ResourceBindingAvailable)
			}
		}
		if mc.Conditions == nil {
			mc.Conditions = []metav1.Condition{}
		}
		manifests = append(manifests, mc)
	}
	total := len(d.ids)
	wc := st.Conditions
	switch {
	case diff != nil:
		meta.RemoveStatusCondition(&wc, fleet.ResourceBindingApplied)
		meta.RemoveStatusCondition(&wc, fleet.ResourceBindingAvailable)
		if nDiffed == total {
			set(&wc, fleet.ResourceBindingDiffReported, metav1.ConditionTrue, reasonAllDiffReported, messageAllDiffReported)
		} else {
			set(&wc, fleet.ResourceBindingDiffReported, metav1.ConditionFalse, reasonNotAllDiff, fmt.Sprintf(messageNotAllDiff, nDiffed, total))
		}
	case applied == nil:
		// Nothing decided yet.
	default:
		meta.RemoveStatusCondition(&wc, fleet.ResourceBindingDiffReported)
		if nApplied == total {
			set(&wc, fleet.ResourceBindingApplied, metav1.ConditionTrue, reasonAllApplied, messageAllApplied)
		} else {
			set(&wc, fleet.ResourceBindingApplied, metav1.ConditionFalse, reasonNotAllApplied, fmt.Sprintf(messageNotAllApplied, nApplied, total))
		}
		switch {
		case nApplied < total || available == nil:
			meta.RemoveStatusCondition(&wc, fleet.ResourceBindingAvailable)
		case nAvailable == total:
			set(&wc, fleet.ResourceBindingAvailable, metav1.ConditionTrue, reasonAllAvailable, messageAllAvailable)
		default:
			set(&wc, fleet.ResourceBindingAvailable, metav1.ConditionFalse, reasonNotAllAvailable, fmt.Sprintf(messageNotAllAvailable, nAvailable, total))
		}
	}
	next := fleet.WorkStatus{Conditions: wc, ManifestConditions: manifests}
	if next.Conditions == nil {
		next.Conditions = []metav1.Condition{}
	}
	if equality.Semantic.DeepEqual(st, next) {
		return nil
	}
	return a.writeWorkStatus(ctx, w, next)
}

// reportUnusable reports a Work whose manifests cannot be read: nothing
// of it is applied.
func (a *Agent) reportUnusable(ctx context.Context, w *unstructured.Unstructured, cause error) error {
	st := currentStatus(w)
	meta.SetStatusCondition(&st.Conditions, metav1.Condition{Type: fleet.ResourceBindingApplied, Status: metav1.ConditionFalse,
		Reason: reasonDecodingErred, Message: cause.Error(), ObservedGeneration: w.GetGeneration(),
		LastTransitionTime: metav1.NewTime(a.cfg.Clock.Now())})
	meta.RemoveStatusCondition(&st.Conditions, fleet.ResourceBindingAvailable)
	st.ManifestConditions = nil
	a.log.Warn("work cannot be applied", "work", w.GetName(), "err", cause.Error())
	return a.writeWorkStatus(ctx, w, st)
}

func currentStatus(w *unstructured.Unstructured) fleet.WorkStatus {
	var st fleet.WorkStatus
	if raw, ok := w.Object["status"].(map[string]any); ok {
		_ = runtime.DefaultUnstructuredConverter.FromUnstructured(raw, &st)
	}
	return st
}

func (a *Agent) writeWorkStatus(ctx context.Context, w *unstructured.Unstructured, st fleet.WorkStatus) error {
	patch, err := json.Marshal(map[string]any{"status": st})
	if err != nil {
		return err
	}
	obj := &unstructured.Unstructured{}
	obj.SetGroupVersionKind(fleet.SchemeGroupVersion.WithKind("Work"))
	obj.SetNamespace(w.GetNamespace())
	obj.SetName(w.GetName())
	if err := a.hub.Status().Patch(ctx, obj, client.RawPatch(types.MergePatchType, patch)); err != nil {
		return fmt.Errorf("report on work %s: %w", w.GetName(), err)
	}
	return nil
}

func idOf(id fleet.ResourceIdentifier) string {
	return id.Group + "/" + id.Kind + "/" + id.Namespace + "/" + id.Name
}

func workIDOf(id fleet.WorkResourceIdentifier) string {
	return id.Group + "/" + id.Kind + "/" + id.Namespace + "/" + id.Name
}
