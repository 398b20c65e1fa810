package kube

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/rest"

	fleet "github.com/gitfleet/gitfleet/api/v1beta1"
	"github.com/gitfleet/gitfleet/internal/condmsg"
	"github.com/gitfleet/gitfleet/reconciler/delivery"
	"github.com/gitfleet/gitfleet/reconciler/member"
)

// Work conditions' reasons and messages, as KubeFleet's work applier
// writes them (pkg/utils/condition, pkg/controllers/workapplier).
const (
	WorkAllManifestsAppliedReason         = "AllManifestsApplied"
	WorkNotAllManifestsAppliedReason      = "SomeManifestsAreNotApplied"
	WorkAllManifestsAvailableReason       = "AllManifestsAvailable"
	WorkNotAllManifestsAvailableReason    = "SomeManifestsAreNotAvailable"
	WorkAllManifestsDiffReportedReason    = "AllManifestsDiffReported"
	WorkNotAllManifestsDiffReportedReason = "SomeManifestsHaveNotReportedDiff"

	AllManifestsAppliedMessage             = "All the specified manifests have been applied"
	AllAppliedObjectAvailableMessage       = "All of the applied manifests are available"
	AllManifestsHaveReportedDiffMessage    = "All the specified manifests have reported diff"
	NotAllManifestsAppliedMessage          = "Failed to apply all manifests (%d of %d manifests are applied)"
	NotAllAppliedObjectsAvailableMessage   = "Some manifests are not available (%d of %d manifests are available)"
	NotAllManifestsHaveReportedDiffMessage = "Failed to report diff on all manifests (%d of %d manifests have reported diff)"

	// Per-manifest results.
	ManifestAppliedReason  = "Applied"
	ManifestAppliedMessage = "Manifest has been applied successfully"
	// ManifestApplyFailedMessage takes the API server's error.
	ManifestApplyFailedMessage = "Failed to apply the manifest (error: %s)"
	ManifestAvailableReason    = "Available"
	ManifestAvailableMessage   = "Manifest is available"
	ManifestNoDiffFoundReason  = "NoDiffFound"
	ManifestFoundDiffReason    = "FoundDiff"
	ManifestNoDiffFoundMsg     = "No diff has been found between the hub cluster and the member cluster"
	ManifestFoundDiffMsg       = "Diff has been found between the hub cluster and the member cluster"
)

// WorkApplier applies Works to one member cluster with the kubeconfig
// driver's code (server-side apply with Flux's ssa, the apply strategy's
// drift and takeover checks, prune of what a Work no longer holds, kstatus
// for availability), for code that receives Works rather than bindings:
// an agent on the member. What it applied for a Work is recorded on the
// member in the ConfigMap gitfleet-system/<work name>.
type WorkApplier struct {
	cl *cluster
}

// NewWorkApplier reaches the member cfg points at; timeout bounds each
// request (30s when 0).
func NewWorkApplier(cfg *rest.Config, timeout time.Duration) (*WorkApplier, error) {
	if timeout <= 0 {
		timeout = 30 * time.Second
	}
	cl, err := newCluster("member", cfg, timeout)
	if err != nil {
		return nil, err
	}
	return &WorkApplier{cl: cl}, nil
}

// workDelivery is w as the kubeconfig driver's code takes it: a binding of w's
// placement at w's generation, with w's apply strategy, recorded under
// w's name.
func workDelivery(w *fleet.Work) (member.Delivery, error) {
	objs := make([]*unstructured.Unstructured, 0, len(w.Spec.Workload.Manifests))
	for i, m := range w.Spec.Workload.Manifests {
		if u, ok := m.Object.(*unstructured.Unstructured); ok {
			objs = append(objs, u) // kept decoded (the kubeconfig driver's)
			continue
		}
		u := &unstructured.Unstructured{}
		if err := u.UnmarshalJSON(m.Raw); err != nil {
			return member.Delivery{}, fmt.Errorf("work %s/%s: manifest %d: %w", w.Namespace, w.Name, i, err)
		}
		objs = append(objs, u)
	}
	// A Work written by hand (no placement label) owns what it applies
	// under its own name, so no two such Works share owner labels.
	placement := w.Labels[fleet.PlacementTrackingLabel]
	if placement == "" {
		placement = w.Name
	}
	b := &fleet.Binding{ObjectMeta: metav1.ObjectMeta{
		Name: w.Labels[fleet.ParentBindingLabel], Namespace: w.Labels[fleet.ParentNamespaceLabel], Generation: w.Generation,
		Labels: map[string]string{fleet.PlacementTrackingLabel: placement}},
		Spec: fleet.ResourceBindingSpec{ApplyStrategy: w.Spec.ApplyStrategy,
			ResourceSnapshotName: w.Annotations[fleet.ParentResourceSnapshotNameAnnotation]}}
	return member.Delivery{Binding: b, Resources: objs, Record: w.Name}, nil
}

// Apply puts w's manifests on the member (or, under ReportDiff, only
// compares them), prunes what w's last apply put there and w no longer
// holds (not what another Work of w's binding holds), and returns w's
// status as KubeFleet's work applier writes it: Applied and Available (or
// DiffReported) at w's generation, and per manifest its conditions with
// its drifts or diffs; an apply that failed as a whole, no manifest
// named (a CRD of w never became established), makes Applied False with
// reason WorkAppliedFailed and the redacted cause (capped: condmsg).
// Beside them, as the push transport's binding does, PruneSkipped
// (gitfleet's, a Work condition as KubeFleet's StatusTrimmed is one)
// names what prunes of w left on the member because it is annotated
// prune: disabled. Observation times are now. The error is one the
// status could not say (the member unreachable): try again.
//
// others are the other Works of w's binding as the hub holds them now
// (receiver first): an object w dropped that one of them holds in its
// manifests is not pruned, only dropped from w's record; that Work's
// apply takes it over, so it is never deleted and made again.
func (a *WorkApplier) Apply(ctx context.Context, w *fleet.Work, others []*fleet.Work, now time.Time) (fleet.WorkStatus, error) {
	res, err := a.cl.applyWork(ctx, w, others, now)
	return res.status, err
}

// workResult is one apply of a Work: its status, and what a later check
// of its health starts from.
type workResult struct {
	work   *fleet.Work
	status fleet.WorkStatus
	// objs are the objects as applied (nil when the apply failed, or under
	// ReportDiff), left what prunes of the Work left on the member, out
	// what the apply strategy held back or found drifted.
	objs []*unstructured.Unstructured
	left inventory
	out  outcome
	// refused is why the apply failed (the member refused a manifest, or
	// the CRDs it applied did not become ready); the status says the Work
	// is not applied, and why (on the manifest the member named, else on
	// the Work's Applied), and the apply is tried again.
	refused error
}

// applyWork is WorkApplier.Apply on cl, with what the kubeconfig driver
// polls the Work's health from afterwards.
func (cl *cluster) applyWork(ctx context.Context, w *fleet.Work, others []*fleet.Work, now time.Time) (workResult, error) {
	res := workResult{work: w}
	d, err := workDelivery(w)
	if err != nil {
		return res, err
	}
	claimed, err := claimedBy(others)
	if err != nil {
		return res, err
	}
	gen := w.Generation
	at := metav1.NewTime(now.UTC().Truncate(time.Second))
	if d.ReportsDiff() {
		diffed, err := cl.reportDiff(ctx, d, fleet.DefaultApplyStrategy(w.Spec.ApplyStrategy))
		if err != nil {
			return res, cl.redact(err)
		}
		st := newStatus(d.Resources)
		st.diffed(diffed, gen, at)
		SetWorkConditions(&st.WorkStatus, true, gen)
		res.status = st.WorkStatus
		return res, nil
	}
	objs, live, left, out, err := cl.apply(ctx, d, claimed)
	if err != nil {
		var ae *applyError
		if !errors.As(err, &ae) {
			return res, cl.redact(err)
		}
		cause := cl.redact(ae.err)
		st := newStatus(d.Resources)
		named := st.applyFailed(ae.object, ae.applied, cause.Error(), gen)
		SetWorkConditions(&st.WorkStatus, false, gen)
		if !named {
			// A failure of the whole Work (a CRD that never became
			// established): no manifest says why, so the Work's own
			// Applied does, as KubeFleet's work applier said it
			// (WorkAppliedFailed, the error, capped, as message).
			meta.SetStatusCondition(&st.Conditions, metav1.Condition{Type: fleet.WorkConditionTypeApplied, Status: metav1.ConditionFalse,
				Reason: delivery.WorkAppliedFailedReason, Message: condmsg.Cap(cause.Error()), ObservedGeneration: gen})
		}
		res.status, res.refused = st.WorkStatus, cause
		return res, nil
	}
	res.objs, res.left, res.out = objs, left, out
	res.status, err = res.check(live, at)
	return res, err
}

// check is the Work's status from what the member holds of its objects
// now (live): what its apply did, and the health of what it applied.
func (res *workResult) check(live map[string]*unstructured.Unstructured, at metav1.Time) (fleet.WorkStatus, error) {
	gen := res.work.Generation
	var h health
	if len(res.out.held) == 0 {
		var err error
		if h, err = healthOf(res.objs, live, gen); err != nil {
			return fleet.WorkStatus{}, err
		}
	}
	st := newStatus(res.objs)
	st.applied(res.out, h, gen, at)
	SetWorkConditions(&st.WorkStatus, false, gen)
	if c, ok := member.PruneSkipped(gen, res.left.sorted()); ok {
		c.Type = fleet.WorkConditionTypePruneSkipped
		st.Conditions = append(st.Conditions, c)
	}
	st.observedIn(live)
	return st.WorkStatus, nil
}

// Remove deletes what w applied on the member, except objects annotated
// prune: disabled and what others (the other Works of w's binding, as
// Apply takes them) hold in their manifests, and its record.
func (a *WorkApplier) Remove(ctx context.Context, w *fleet.Work, others []*fleet.Work) error {
	d, err := workDelivery(w)
	if err != nil {
		return err
	}
	claimed, err := claimedBy(others)
	if err != nil {
		return err
	}
	_, err = a.cl.remove(ctx, d, claimed)
	return a.cl.redact(err)
}

// Redact hides the member's API server address in err's message, as
// Apply's and Remove's errors do: for errors of the member met beside
// them (the agent's AppliedWorks), which a Work's status may carry.
func (a *WorkApplier) Redact(err error) error { return a.cl.redact(err) }

// claimedBy is what the manifests of works hold. Only the identifying
// fields of each manifest are read.
func claimedBy(works []*fleet.Work) (inventory, error) {
	out := inventory{}
	for _, w := range works {
		for i, m := range w.Spec.Workload.Manifests {
			if u, ok := m.Object.(*unstructured.Unstructured); ok {
				out[member.Identify(u)] = true
				continue
			}
			var id struct {
				APIVersion string `json:"apiVersion"`
				Kind       string `json:"kind"`
				Metadata   struct {
					Name      string `json:"name"`
					Namespace string `json:"namespace"`
				} `json:"metadata"`
			}
			if err := json.Unmarshal(m.Raw, &id); err != nil {
				return nil, fmt.Errorf("work %s/%s: manifest %d: %w", w.Namespace, w.Name, i, err)
			}
			gv, err := schema.ParseGroupVersion(id.APIVersion)
			if err != nil {
				return nil, fmt.Errorf("work %s/%s: manifest %d: %w", w.Namespace, w.Name, i, err)
			}
			out[fleet.ResourceIdentifier{Group: gv.Group, Version: gv.Version, Kind: id.Kind,
				Namespace: id.Metadata.Namespace, Name: id.Metadata.Name}] = true
		}
	}
	return out, nil
}

// workStatus builds a Work's status, one manifest condition per manifest
// in w's order.
type workStatus struct {
	fleet.WorkStatus
	byID map[string]int // by idKey: index into ManifestConditions
}

func newStatus(objs []*unstructured.Unstructured) *workStatus {
	st := &workStatus{byID: map[string]int{}}
	for i, o := range objs {
		gvk := o.GroupVersionKind()
		st.ManifestConditions = append(st.ManifestConditions, fleet.ManifestCondition{Identifier: fleet.WorkResourceIdentifier{
			Ordinal: i, Group: gvk.Group, Version: gvk.Version, Kind: gvk.Kind, Namespace: o.GetNamespace(), Name: o.GetName()},
			Conditions: []metav1.Condition{}})
		st.byID[idKey(member.Identify(o))] = i
	}
	return st
}

func (st *workStatus) set(i int, c metav1.Condition) {
	meta.SetStatusCondition(&st.ManifestConditions[i].Conditions, c)
}

// applyFailed: the member refused obj (nil when it named none) with msg;
// the objects in applied were applied before, nothing else was. It
// reports whether a manifest of the Work names the failure. The
// manifest's message is capped (condmsg): the status write fails on one
// over 32 KiB.
func (st *workStatus) applyFailed(obj *unstructured.Unstructured, applied []*unstructured.Unstructured, msg string, gen int64) (named bool) {
	if obj != nil {
		if i, ok := st.byID[idKey(member.Identify(obj))]; ok {
			st.set(i, metav1.Condition{Type: fleet.WorkConditionTypeApplied, Status: metav1.ConditionFalse,
				Reason: member.ManifestApplyFailedReason, Message: condmsg.Cap(fmt.Sprintf(ManifestApplyFailedMessage, msg)), ObservedGeneration: gen})
			named = true
		}
	}
	for _, o := range applied {
		if i, ok := st.byID[idKey(member.Identify(o))]; ok {
			st.set(i, metav1.Condition{Type: fleet.WorkConditionTypeApplied, Status: metav1.ConditionTrue,
				Reason: ManifestAppliedReason, Message: ManifestAppliedMessage, ObservedGeneration: gen})
		}
	}
	return named
}

// applied records an apply: held objects (the strategy's drift and
// takeover checks) are not applied, with their drifts or diffs; the rest
// are, with their availability.
func (st *workStatus) applied(out outcome, h health, gen int64, at metav1.Time) {
	for _, f := range out.Failed {
		if i, ok := st.byID[idKey(f.ResourceIdentifier)]; ok {
			st.set(i, f.Condition)
		}
	}
	for _, d := range out.Drifted {
		if i, ok := st.byID[idKey(d.ResourceIdentifier)]; ok {
			st.ManifestConditions[i].DriftDetails = &fleet.DriftDetails{ObservationTime: at, FirstDriftedObservedTime: at,
				ObservedInMemberClusterGeneration: d.TargetClusterObservedGeneration, ObservedDrifts: d.ObservedDrifts}
		}
	}
	for _, d := range out.Diffed {
		if i, ok := st.byID[idKey(d.ResourceIdentifier)]; ok {
			st.ManifestConditions[i].DiffDetails = &fleet.DiffDetails{ObservationTime: at, FirstDiffedObservedTime: at,
				ObservedInMemberClusterGeneration: d.TargetClusterObservedGeneration, ObservedDiffs: d.ObservedDiffs}
		}
	}
	applied := 0
	for i := range st.ManifestConditions {
		if meta.FindStatusCondition(st.ManifestConditions[i].Conditions, fleet.WorkConditionTypeApplied) == nil {
			st.set(i, metav1.Condition{Type: fleet.WorkConditionTypeApplied, Status: metav1.ConditionTrue,
				Reason: ManifestAppliedReason, Message: ManifestAppliedMessage, ObservedGeneration: gen})
			applied++
		}
	}
	if applied < len(st.ManifestConditions) {
		return // KubeFleet reports availability only of an applied Work
	}
	notCurrent := map[string]metav1.Condition{}
	for _, f := range h.notCurrent {
		notCurrent[idKey(f.ResourceIdentifier)] = f.Condition
	}
	for k, i := range st.byID {
		c, ok := notCurrent[k]
		if !ok {
			c = metav1.Condition{Type: fleet.WorkConditionTypeAvailable, Status: metav1.ConditionTrue,
				Reason: ManifestAvailableReason, Message: ManifestAvailableMessage, ObservedGeneration: gen}
		}
		c.Type = fleet.WorkConditionTypeAvailable
		st.set(i, c)
	}
}

// diffed records a ReportDiff pass: every manifest compared, the ones that
// differ with their diffs.
func (st *workStatus) diffed(diffed []fleet.DiffedResourcePlacement, gen int64, at metav1.Time) {
	found := map[string]fleet.DiffedResourcePlacement{}
	for _, d := range diffed {
		found[idKey(d.ResourceIdentifier)] = d
	}
	for k, i := range st.byID {
		c := metav1.Condition{Type: fleet.WorkConditionTypeDiffReported, Status: metav1.ConditionTrue,
			Reason: ManifestNoDiffFoundReason, Message: ManifestNoDiffFoundMsg, ObservedGeneration: gen}
		if d, ok := found[k]; ok {
			c.Reason, c.Message = ManifestFoundDiffReason, ManifestFoundDiffMsg
			st.ManifestConditions[i].DiffDetails = &fleet.DiffDetails{ObservationTime: at, FirstDiffedObservedTime: at,
				ObservedInMemberClusterGeneration: d.TargetClusterObservedGeneration, ObservedDiffs: d.ObservedDiffs}
		}
		st.set(i, c)
	}
}

// observedIn makes each manifest's conditions observe the generation of
// its object on the member (0 when it has none), as KubeFleet's work
// applier does; the Work's own conditions observe the Work's.
func (st *workStatus) observedIn(live map[string]*unstructured.Unstructured) {
	for k, i := range st.byID {
		var g int64
		if u, ok := live[k]; ok {
			g = u.GetGeneration()
		}
		for j := range st.ManifestConditions[i].Conditions {
			st.ManifestConditions[i].Conditions[j].ObservedGeneration = g
		}
	}
}
