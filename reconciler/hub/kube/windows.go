package kube

import (
	"context"
	"slices"
	"strings"
	"sync"

	"k8s.io/apimachinery/pkg/api/equality"

	fleet "github.com/gitfleet/gitfleet/api/v1beta1"
	"github.com/gitfleet/gitfleet/reconciler/hub"
)

// windowStore keeps people's RolloutWindows. gitfleet's own group has no
// CRD on the API server yet, so the hub keeps the Git loop's copies in
// memory: the loop applies every object of the tracked commit again after
// a restart, before the engine runs, so nothing is lost that Git does not
// hold; `kubectl get` does not show them.
type windowStore struct {
	mu sync.Mutex
	m  map[string]*fleet.RolloutWindow
}

func (h *Hub) applyRolloutWindow(w *fleet.RolloutWindow) {
	s := &h.windows
	s.mu.Lock()
	cur, ok := s.m[w.Name]
	if ok && equality.Semantic.DeepEqual(cur.Spec, w.Spec) && equality.Semantic.DeepEqual(cur.Labels, w.Labels) &&
		equality.Semantic.DeepEqual(cur.Annotations, w.Annotations) {
		s.mu.Unlock()
		return
	}
	next := w.DeepCopy()
	next.SetGroupVersionKind(fleet.GitfleetGroupVersion.WithKind(fleet.KindRolloutWindow))
	next.Generation = 1
	if ok {
		next.Generation = cur.Generation
		if !equality.Semantic.DeepEqual(cur.Spec, w.Spec) {
			next.Generation++
		}
	}
	if s.m == nil {
		s.m = map[string]*fleet.RolloutWindow{}
	}
	s.m[w.Name] = next
	s.mu.Unlock()
	h.notify(hub.Event{Kind: hub.EventRolloutWindow, Key: hub.Key{Name: w.Name}})
}

func (h *Hub) deleteRolloutWindow(key hub.Key) {
	s := &h.windows
	s.mu.Lock()
	_, ok := s.m[key.Name]
	delete(s.m, key.Name)
	s.mu.Unlock()
	if ok {
		h.notify(hub.Event{Kind: hub.EventRolloutWindow, Key: key})
	}
}

// ListRolloutWindows implements hub.RolloutWindows: copies, by name.
func (h *Hub) ListRolloutWindows(context.Context) ([]*fleet.RolloutWindow, error) {
	s := &h.windows
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]*fleet.RolloutWindow, 0, len(s.m))
	for _, w := range s.m {
		out = append(out, w.DeepCopy())
	}
	slices.SortFunc(out, func(a, b *fleet.RolloutWindow) int { return strings.Compare(a.Name, b.Name) })
	return out, nil
}
