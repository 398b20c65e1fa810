package embedded

import (
	"context"

	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	fleet "github.com/gitfleet/gitfleet/api/v1beta1"
	"github.com/gitfleet/gitfleet/reconciler/hub"
)

// The methods below feed the user's objects (rendered from Git) into the
// hub. They play the API server's part for writes a person makes: a spec
// change raises metadata.generation, status is kept. Admission (immutable
// fields, state transitions) is checked before, by the caller.

// ApplyPlacement creates or updates a placement's spec and labels.
func (h *Hub) ApplyPlacement(p *fleet.Placement) {
	h.mu.Lock()
	defer h.unlock()
	setKind(p, fleet.PlacementKind(p.Namespace))
	next := p.DeepCopy()
	if cur, ok := h.placements.peek(keyOf(p)); ok {
		if equality.Semantic.DeepEqual(cur.Spec, p.Spec) && equality.Semantic.DeepEqual(cur.Labels, p.Labels) &&
			equality.Semantic.DeepEqual(cur.Annotations, p.Annotations) {
			return
		}
		keepMeta(&next.ObjectMeta, &cur.ObjectMeta, !equality.Semantic.DeepEqual(cur.Spec, p.Spec))
		next.Status = *cur.Status.DeepCopy()
		h.stamp(next, false)
	} else {
		h.stamp(next, true)
	}
	h.persist(h.placements.put(next))
	h.planRevision++
	h.emit(hub.Event{Kind: hub.EventPlacement, Key: keyOf(next), Placement: keyOf(next)})
}

// DeletePlacement removes a placement.
func (h *Hub) DeletePlacement(key hub.Key) {
	h.mu.Lock()
	defer h.unlock()
	cur, ok := h.placements.peek(key)
	if !ok {
		return
	}
	h.placements.delete(key)
	h.forget(cur.Kind, key)
	h.planRevision++
	h.emit(hub.Event{Kind: hub.EventPlacement, Key: key, Placement: key})
}

// ApplyMemberCluster creates or updates a member cluster.
func (h *Hub) ApplyMemberCluster(m *fleet.MemberCluster) {
	h.mu.Lock()
	defer h.unlock()
	setMemberKind(m)
	next := m.DeepCopy()
	if cur, ok := h.members.peek(keyOf(m)); ok {
		if equality.Semantic.DeepEqual(cur.Spec, m.Spec) && equality.Semantic.DeepEqual(cur.Labels, m.Labels) &&
			equality.Semantic.DeepEqual(cur.Annotations, m.Annotations) {
			return
		}
		keepMeta(&next.ObjectMeta, &cur.ObjectMeta, !equality.Semantic.DeepEqual(cur.Spec, m.Spec))
		next.Status = *cur.Status.DeepCopy()
		h.stamp(next, false)
	} else {
		h.stamp(next, true)
	}
	setJoined(next, h.clock.Now())
	setSimulatedProperties(next, h.clock.Now())
	h.persist(h.members.put(next))
	h.planRevision++
	h.membersRevision++
	h.emit(hub.Event{Kind: hub.EventMemberCluster, Key: keyOf(next)})
}

// DeleteMemberCluster removes a member cluster (it leaves the fleet).
func (h *Hub) DeleteMemberCluster(name string) {
	h.mu.Lock()
	defer h.unlock()
	key := hub.Key{Name: name}
	if _, ok := h.members.peek(key); !ok {
		return
	}
	h.members.delete(key)
	h.forget(fleet.KindMemberCluster, key)
	h.planRevision++
	h.membersRevision++
	h.emit(hub.Event{Kind: hub.EventMemberCluster, Key: key})
}

// ApplyUpdateStrategy creates or replaces a strategy.
func (h *Hub) ApplyUpdateStrategy(s *fleet.UpdateStrategy) {
	h.mu.Lock()
	defer h.unlock()
	setKind(s, fleet.UpdateStrategyKind(s.Namespace))
	next := s.DeepCopy()
	if cur, ok := h.strategies.peek(keyOf(s)); ok {
		if equality.Semantic.DeepEqual(cur.Spec, s.Spec) {
			return
		}
		keepMeta(&next.ObjectMeta, &cur.ObjectMeta, true)
		h.stamp(next, false)
	} else {
		h.stamp(next, true)
	}
	h.persist(h.strategies.put(next))
}

// DeleteUpdateStrategy removes a strategy.
func (h *Hub) DeleteUpdateStrategy(key hub.Key) {
	h.mu.Lock()
	defer h.unlock()
	if cur, ok := h.strategies.peek(key); ok {
		h.strategies.delete(key)
		h.forget(cur.Kind, key)
	}
}

// ApplyUpdateRun creates a run or updates its spec (raising its generation
// when the spec changed); the status is kept. It reports whether anything
// changed.
func (h *Hub) ApplyUpdateRun(r *fleet.UpdateRun) bool {
	h.mu.Lock()
	defer h.unlock()
	setKind(r, fleet.UpdateRunKind(r.Namespace))
	if cur, ok := h.runs.head(keyOf(r)); ok && equality.Semantic.DeepEqual(cur.Spec, r.Spec) {
		return false // the Git loop applies every run of every commit: a husk stays packed
	}
	next := r.DeepCopy()
	if cur, ok := h.runs.peek(keyOf(r)); ok {
		keepMeta(&next.ObjectMeta, &cur.ObjectMeta, true)
		next.Status = *cur.Status.DeepCopy()
		h.stamp(next, false)
	} else {
		next.Status = fleet.UpdateRunStatus{}
		h.stamp(next, true)
	}
	h.persist(h.runs.put(next))
	h.emit(hub.Event{Kind: hub.EventUpdateRun, Key: keyOf(next), Run: keyOf(next)})
	return true
}

// DeleteUpdateRun starts a run's deletion; the engine finishes it.
func (h *Hub) DeleteUpdateRun(key hub.Key) {
	h.mu.Lock()
	defer h.unlock()
	cur, ok := h.runs.peek(key)
	if !ok || cur.DeletionTimestamp != nil {
		return
	}
	next := cur.DeepCopy()
	now := metav1.NewTime(h.clock.Now().UTC().Truncate(1e9))
	next.DeletionTimestamp = &now
	h.stamp(next, false)
	h.persist(h.runs.put(next))
	h.emit(hub.Event{Kind: hub.EventUpdateRun, Key: key, Run: key})
}

// ApplyApprovalRequestStatus records a person's change to an approval
// request's conditions (an Approved condition merged in Git).
func (h *Hub) ApplyApprovalRequestStatus(ctx context.Context, a *fleet.ApprovalRequest) error {
	return hub.ReplaceApprovalRequestStatus(ctx, h, a)
}

// keepMeta carries server-owned metadata from the stored object to its
// replacement, raising the generation when the spec changed.
func keepMeta(next, cur metav1.Object, specChanged bool) {
	next.SetCreationTimestamp(cur.GetCreationTimestamp())
	next.SetUID(cur.GetUID())
	next.SetResourceVersion(cur.GetResourceVersion())
	next.SetFinalizers(cur.GetFinalizers())
	next.SetDeletionTimestamp(cur.GetDeletionTimestamp())
	next.SetGeneration(cur.GetGeneration())
	if specChanged {
		next.SetGeneration(cur.GetGeneration() + 1)
	}
}

func setMemberKind(m *fleet.MemberCluster) {
	m.APIVersion = fleet.ClusterAPIVersion
	m.Kind = fleet.KindMemberCluster
}

// ListUpdateStrategies returns every strategy.
func (h *Hub) ListUpdateStrategies(context.Context) ([]*fleet.UpdateStrategy, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.strategies.list(nil), nil
}

// AnnotateUpdateRun sets (or, with an empty value, removes) one annotation
// on a run without touching its spec or generation: gitfleet's notes to
// the user, such as a rejected spec change, that must survive in the run's
// status file.
func (h *Hub) AnnotateUpdateRun(key hub.Key, name, value string) {
	h.mu.Lock()
	defer h.unlock()
	if cur, ok := h.runs.head(key); !ok || cur.Annotations[name] == value {
		return // the Git loop clears every run's note every sync: a husk stays packed
	}
	annotate[*fleet.UpdateRun](h, &h.runs, key, name, value)
}

// AnnotatePlacement is AnnotateUpdateRun for placements.
func (h *Hub) AnnotatePlacement(key hub.Key, name, value string) {
	h.mu.Lock()
	defer h.unlock()
	annotate(h, &h.placements, key, name, value)
}

// AnnotateApprovalRequest is AnnotateUpdateRun for approval requests: a
// note on the request file, such as why a person's edit of it was not
// taken. It wakes the request's run, which reports the note on its task.
func (h *Hub) AnnotateApprovalRequest(key hub.Key, name, value string) {
	h.mu.Lock()
	defer h.unlock()
	if annotate(h, &h.approvals, key, name, value) {
		cur, _ := h.approvals.peek(key)
		h.emit(approvalEvent(cur))
	}
}

// annotated is a table annotate writes to.
type annotated[T object] interface {
	peek(hub.Key) (T, bool)
	putOwned(T)
}

// annotate writes one annotation of a stored object; the lock is held.
func annotate[T object](h *Hub, t annotated[T], key hub.Key, name, value string) (changed bool) {
	cur, ok := t.peek(key)
	if !ok || cur.GetAnnotations()[name] == value {
		return false
	}
	next := cur.DeepCopyObject().(T)
	annotations := next.GetAnnotations()
	if value == "" {
		delete(annotations, name)
	} else {
		if annotations == nil {
			annotations = map[string]string{}
		}
		annotations[name] = value
	}
	next.SetAnnotations(annotations)
	h.stamp(next, false)
	t.putOwned(next)
	h.persist(next)
	return true
}
