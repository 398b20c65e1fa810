package hub

import (
	"context"

	"k8s.io/apimachinery/pkg/runtime"
)

// ObjectRef names a persisted object: its kind and key.
type ObjectRef struct {
	Kind string
	Key  Key
}

// Store is where a hub's objects are written through to, for people to
// read: the Git status tree in `serve` (one file per object, committed and
// pushed by Flush), memory in tests and `gitfleet simulate`. The embedded
// hub keeps its state in memory and restores it from the Store; the kube
// hub keeps it on the API server and mirrors it into the Store.
//
// Durability contract: the embedded hub calls Flush, and waits for it to
// succeed, before any side effect that a change guards (delivering a
// snapshot to a member after a binding was bound), so a restart from the
// store never skips or repeats a decision.
type Store interface {
	// Load returns every persisted object (typed fleet objects).
	Load(ctx context.Context) ([]runtime.Object, error)
	// Put records the new state of an object.
	Put(ref ObjectRef, obj runtime.Object)
	// Delete records that an object is gone.
	Delete(ref ObjectRef)
	// Flush makes every recorded change durable. urgent is true when a side
	// effect waits for it; a store may batch non-urgent flushes.
	Flush(ctx context.Context, urgent bool) error
}

// SharingStore is implemented by stores that can record an object without
// copying it, for a caller whose objects never change once written (the
// embedded hub replaces its objects, it never modifies them): PutShared is
// Put with obj shared between the caller and the store, which neither
// modifies. At 10,000 clusters it saves a copy of every binding, run and
// placement written, and keeps one copy of each alive instead of two.
type SharingStore interface {
	Store
	PutShared(ref ObjectRef, obj runtime.Object)
}

// SealingStore is a Store whose Flush comes in two steps, so a hub's
// writers need not wait while a flush travels (a push to a remote): Seal
// fixes what the flush carries, every change recorded before it; changes
// recorded after go into the next one. finish makes the sealed changes
// durable, as Flush does; it must be called, once, before the next Seal
// or Flush, which wait for it.
type SealingStore interface {
	Store
	Seal(urgent bool) (finish func(context.Context) error)
}
