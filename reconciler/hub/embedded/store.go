package embedded

import (
	"context"
	"sort"
	"sync"

	"k8s.io/apimachinery/pkg/runtime"

	"github.com/gitfleet/gitfleet/reconciler/hub"
)

// ObjectRef names a persisted object: its kind and key.
type ObjectRef = hub.ObjectRef

// Store is the embedded hub's persistence boundary (hub.Store): the hub
// keeps its state in memory, writes every change through to the Store and
// restores from it.
type Store = hub.Store

// MemoryStore is a Store that keeps objects in memory and counts flushes.
type MemoryStore struct {
	mu      sync.Mutex
	objects map[ObjectRef]runtime.Object
	dirty   int
	// Flushes counts Flush calls that had changes to flush.
	Flushes int
}

// NewMemoryStore returns an empty MemoryStore.
func NewMemoryStore() *MemoryStore {
	return &MemoryStore{objects: map[ObjectRef]runtime.Object{}}
}

// Load returns copies of the stored objects, in a stable order.
func (s *MemoryStore) Load(context.Context) ([]runtime.Object, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	refs := make([]ObjectRef, 0, len(s.objects))
	for r := range s.objects {
		refs = append(refs, r)
	}
	sort.Slice(refs, func(i, j int) bool {
		if refs[i].Kind != refs[j].Kind {
			return refs[i].Kind < refs[j].Kind
		}
		return refs[i].Key.String() < refs[j].Key.String()
	})
	out := make([]runtime.Object, 0, len(refs))
	for _, r := range refs {
		out = append(out, s.objects[r].DeepCopyObject())
	}
	return out, nil
}

// Put stores a copy of obj.
func (s *MemoryStore) Put(ref ObjectRef, obj runtime.Object) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.objects[ref] = obj.DeepCopyObject()
	s.dirty++
}

// Delete removes the object.
func (s *MemoryStore) Delete(ref ObjectRef) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.objects, ref)
	s.dirty++
}

// Flush counts the flush when there were changes.
func (s *MemoryStore) Flush(context.Context, bool) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.dirty > 0 {
		s.Flushes++
		s.dirty = 0
	}
	return nil
}

// Len is the number of stored objects.
func (s *MemoryStore) Len() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.objects)
}

// DiscardStore is a Store that keeps nothing: for `gitfleet simulate`,
// whose hub never restarts, a write-through copy of every object would
// double its memory.
type DiscardStore struct{}

// Load returns nothing.
func (DiscardStore) Load(context.Context) ([]runtime.Object, error) { return nil, nil }

// Put forgets obj.
func (DiscardStore) Put(ObjectRef, runtime.Object) {}

// Delete does nothing.
func (DiscardStore) Delete(ObjectRef) {}

// Flush has nothing to flush.
func (DiscardStore) Flush(context.Context, bool) error { return nil }
