package agent

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"time"

	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	fleet "github.com/gitfleet/gitfleet/api/v1beta1"
	"github.com/gitfleet/gitfleet/internal/condmsg"
	"github.com/gitfleet/gitfleet/reconciler/delivery"
)

var works = fleet.SchemeGroupVersion.WithResource("works")

// reasonDecodingErred is the work applier's reason for a Work whose
// manifests do not decode (KubeFleet's ApplyOrReportDiffResTypeDecodingErred).
const reasonDecodingErred = "DecodingErred"

// errNotApplied retries a Work the member did not take in full, with
// the queue's backoff.
type errNotApplied struct{ message string }

func (e errNotApplied) Error() string { return e.message }

func (a *Agent) next(ctx context.Context) bool {
	name, quit := a.queue.Get()
	if quit {
		return false
	}
	defer a.queue.Done(name)
	after, err := a.process(ctx, name)
	if err != nil && ctx.Err() == nil {
		a.log.Info("work not applied, retrying", "work", name, "attempt", a.queue.NumRequeues(name)+1, "err", err.Error())
		a.queue.AddRateLimited(name)
		return true
	}
	a.queue.Forget(name)
	if after > 0 {
		a.queue.AddAfter(name, after)
	}
	return true
}

// process applies Work name as it stands on the hub — its AppliedWork
// written first, its status reported from what the Applier returns — or
// removes what it applied once deleted; a failure of the member to take
// it (its record refused, the member unreachable) is on its Applied
// (reportFailed). It returns when to look again:
// the poll interval while manifests become available, the drift check
// interval once the Work is available (0: not again until it changes).
func (a *Agent) process(ctx context.Context, name string) (time.Duration, error) {
	if !a.Joined() {
		return 0, nil // taken again on join
	}
	obj, ok, err := a.works.GetStore().GetByKey(a.namespace + "/" + name)
	if err != nil {
		return 0, err
	}
	if !ok {
		return 0, a.remove(ctx, name, nil)
	}
	u := obj.(*unstructured.Unstructured)
	w := &fleet.Work{}
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, w); err != nil {
		return 0, a.reportUnusable(ctx, u.GetGeneration(), &fleet.Work{ObjectMeta: metav1.ObjectMeta{Namespace: a.namespace, Name: name}}, err)
	}
	if w.DeletionTimestamp != nil {
		if !slices.Contains(w.Finalizers, fleet.WorkFinalizer) {
			return 0, nil
		}
		if err := a.remove(ctx, name, w); err != nil {
			return 0, err
		}
		return 0, a.setFinalizers(ctx, w, slices.DeleteFunc(slices.Clone(w.Finalizers), func(f string) bool { return f == fleet.WorkFinalizer }))
	}
	if !slices.Contains(w.Finalizers, fleet.WorkFinalizer) {
		if err := a.setFinalizers(ctx, w, append(slices.Clone(w.Finalizers), fleet.WorkFinalizer)); err != nil {
			return 0, err
		}
	}
	objs, err := delivery.WorkManifests(w)
	if err != nil {
		return 0, a.reportUnusable(ctx, w.Generation, w, err)
	}
	aw := &fleet.AppliedWork{ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: fleet.AppliedWorkSpec{WorkName: name, WorkNamespace: a.namespace}}
	for i, o := range objs {
		gvk := o.GroupVersionKind()
		aw.Status.AppliedResources = append(aw.Status.AppliedResources, fleet.AppliedResourceMeta{WorkResourceIdentifier: fleet.WorkResourceIdentifier{
			Ordinal: i, Group: gvk.Group, Version: gvk.Version, Kind: gvk.Kind, Namespace: o.GetNamespace(), Name: o.GetName()}})
	}
	if err := a.member.RecordApplied(ctx, aw); err != nil {
		return 0, a.reportFailed(ctx, w, err)
	}
	a.mu.Lock()
	a.applied[name] = w
	a.mu.Unlock()
	others, err := a.siblings(w)
	if err != nil {
		return 0, err
	}
	st, err := a.member.Apply(ctx, w, others, a.cfg.Clock.Now())
	if err != nil {
		return 0, a.reportFailed(ctx, w, err)
	}
	if err := a.report(ctx, w, st); err != nil {
		return 0, err
	}
	return a.again(w, st)
}

// again says when a Work whose status is st is looked at again.
func (a *Agent) again(w *fleet.Work, st fleet.WorkStatus) (time.Duration, error) {
	if d := meta.FindStatusCondition(st.Conditions, fleet.WorkConditionTypeDiffReported); d != nil && d.Status == metav1.ConditionTrue {
		return a.cfg.DriftCheckInterval, nil
	}
	applied := meta.FindStatusCondition(st.Conditions, fleet.WorkConditionTypeApplied)
	switch {
	case applied == nil || applied.Status != metav1.ConditionTrue:
		msg := "not applied"
		if applied != nil {
			msg = applied.Message
		}
		return 0, errNotApplied{message: fmt.Sprintf("work %s: %s", w.Name, msg)}
	case meta.IsStatusConditionTrue(st.Conditions, fleet.WorkConditionTypeAvailable):
		return a.cfg.DriftCheckInterval, nil
	default:
		return a.cfg.PollInterval, nil
	}
}

// remove takes off the member what Work name applied (w, or the Work as
// last applied when it is gone from the hub), and its AppliedWork.
func (a *Agent) remove(ctx context.Context, name string, w *fleet.Work) error {
	a.mu.Lock()
	if w == nil {
		w = a.applied[name]
	}
	a.mu.Unlock()
	if w == nil {
		w = &fleet.Work{ObjectMeta: metav1.ObjectMeta{Namespace: a.namespace, Name: name}}
	}
	others, err := a.siblings(w)
	if err != nil {
		return err
	}
	if err := a.member.Remove(ctx, w, others); err != nil {
		return err
	}
	a.mu.Lock()
	delete(a.applied, name)
	delete(a.reported, name)
	a.mu.Unlock()
	return a.member.ForgetApplied(ctx, name)
}

// siblings are the other Works of w's binding in the agent's namespace,
// as the hub holds them, not being deleted: what their manifests hold,
// w's prune and removal leave for their apply to take over (receiver
// first). A Work of no binding (written by hand) has none.
func (a *Agent) siblings(w *fleet.Work) ([]*fleet.Work, error) {
	binding, ok := w.Labels[fleet.ParentBindingLabel]
	if !ok {
		return nil, nil
	}
	var out []*fleet.Work
	for _, obj := range a.works.GetStore().List() {
		u := obj.(*unstructured.Unstructured)
		l := u.GetLabels()
		if u.GetName() == w.Name || u.GetNamespace() != a.namespace || u.GetDeletionTimestamp() != nil ||
			l[fleet.ParentBindingLabel] != binding || l[fleet.ParentNamespaceLabel] != w.Labels[fleet.ParentNamespaceLabel] {
			continue
		}
		sib := &fleet.Work{}
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, sib); err != nil {
			return nil, fmt.Errorf("work %s of the same binding as %s: %w", u.GetName(), w.Name, err)
		}
		out = append(out, sib)
	}
	return out, nil
}

func (a *Agent) setFinalizers(ctx context.Context, w *fleet.Work, finalizers []string) error {
	if finalizers == nil {
		finalizers = []string{}
	}
	patch, err := json.Marshal(map[string]any{"metadata": map[string]any{"finalizers": finalizers, "resourceVersion": w.ResourceVersion}})
	if err != nil {
		return err
	}
	if err := a.hub.Patch(ctx, workRef(w), client.RawPatch(types.MergePatchType, patch)); err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("set the finalizers of work %s: %w", w.Name, err)
	}
	return nil
}

// report writes st as w's status, unless its status already says it. A
// condition whose status did not change keeps its last transition time.
func (a *Agent) report(ctx context.Context, w *fleet.Work, st fleet.WorkStatus) error {
	cur := a.statusOf(w)
	now := metav1.NewTime(a.cfg.Clock.Now().UTC().Truncate(time.Second))
	st.Conditions = keepTransitions(cur.Conditions, st.Conditions, now)
	old := map[fleet.WorkResourceIdentifier][]metav1.Condition{}
	for _, mc := range cur.ManifestConditions {
		old[mc.Identifier] = mc.Conditions
	}
	for i := range st.ManifestConditions {
		mc := &st.ManifestConditions[i]
		mc.Conditions = keepTransitions(old[mc.Identifier], mc.Conditions, now)
	}
	if equality.Semantic.DeepEqual(cur, st) {
		return nil
	}
	if err := a.writeWorkStatus(ctx, w, st); err != nil {
		return err
	}
	a.mu.Lock()
	a.reported[w.Name] = reportedStatus{uid: w.UID, generation: w.Generation, status: st}
	a.mu.Unlock()
	return nil
}

// reportedStatus is the status the agent last wrote on a Work, at the
// Work's UID and generation.
type reportedStatus struct {
	uid        types.UID
	generation int64
	status     fleet.WorkStatus
}

// statusOf is w's status now: the agent's last write on w when it was at
// w's UID and generation (the agent alone writes a Work's status, and the
// cache w comes from may not show that write yet: a pass the agent's own
// finalizer write starts reads w without it, and wrote it again), else
// w's.
func (a *Agent) statusOf(w *fleet.Work) fleet.WorkStatus {
	a.mu.Lock()
	defer a.mu.Unlock()
	if r, ok := a.reported[w.Name]; ok && r.uid == w.UID && r.generation == w.Generation {
		return r.status
	}
	return w.Status
}

func keepTransitions(old, cur []metav1.Condition, now metav1.Time) []metav1.Condition {
	out := make([]metav1.Condition, 0, len(cur))
	for _, c := range cur {
		c.LastTransitionTime = now
		if o := meta.FindStatusCondition(old, c.Type); o != nil && o.Status == c.Status {
			c.LastTransitionTime = o.LastTransitionTime
		}
		out = append(out, c)
	}
	return out
}

// reportUnusable reports a Work whose manifests cannot be read: nothing
// of it is applied.
func (a *Agent) reportUnusable(ctx context.Context, gen int64, w *fleet.Work, cause error) error {
	st := fleet.WorkStatus{Conditions: []metav1.Condition{{Type: fleet.WorkConditionTypeApplied, Status: metav1.ConditionFalse,
		Reason: reasonDecodingErred, Message: condmsg.Cap(cause.Error()), ObservedGeneration: gen}}}
	a.log.Warn("work cannot be applied", "work", w.Name, "err", cause.Error())
	return a.report(ctx, w, st)
}

// reportFailed reports a Work the member failed to take as a whole
// (cause: it refused the agent's record of the Work, or could not be
// reached) as the work applier reports a whole-Work failure: Applied
// False, WorkAppliedFailed, the cause (redacted by the Member, capped) as
// message, so the binding says why, not only the agent's log; cause is
// returned, to try again. An agent that is stopping reports nothing.
func (a *Agent) reportFailed(ctx context.Context, w *fleet.Work, cause error) error {
	if ctx.Err() != nil {
		return cause
	}
	st := fleet.WorkStatus{Conditions: []metav1.Condition{{Type: fleet.WorkConditionTypeApplied, Status: metav1.ConditionFalse,
		Reason: delivery.WorkAppliedFailedReason, Message: condmsg.Cap(cause.Error()), ObservedGeneration: w.Generation}}}
	if err := a.report(ctx, w, st); err != nil {
		return errors.Join(cause, err)
	}
	return cause
}

func (a *Agent) writeWorkStatus(ctx context.Context, w *fleet.Work, st fleet.WorkStatus) error {
	if st.Conditions == nil {
		st.Conditions = []metav1.Condition{}
	}
	if st.ManifestConditions == nil {
		st.ManifestConditions = []fleet.ManifestCondition{}
	}
	patch, err := json.Marshal(map[string]any{"status": st})
	if err != nil {
		return err
	}
	if err := a.hub.Status().Patch(ctx, workRef(w), client.RawPatch(types.MergePatchType, patch)); err != nil {
		return fmt.Errorf("report on work %s: %w", w.Name, err)
	}
	return nil
}

// workRef names w for a patch.
func workRef(w *fleet.Work) *unstructured.Unstructured {
	obj := &unstructured.Unstructured{}
	obj.SetGroupVersionKind(fleet.SchemeGroupVersion.WithKind(fleet.KindWork))
	obj.SetNamespace(w.Namespace)
	obj.SetName(w.Name)
	return obj
}
