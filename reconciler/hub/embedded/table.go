package embedded

import (
	"sort"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
)

// object is what the hub stores: a fleet object with metadata.
type object interface {
	metav1.Object
	runtime.Object
}

// table holds the objects of one kind family, keyed by namespace/name. It
// hands out deep copies so callers never alias the hub's state. A stored
// object is never modified, only replaced: that is what lets the hub share
// it with its Store (hub.SharingStore) and with read-only listers.
type table[T object] struct {
	items map[types.NamespacedName]T
}

func newTable[T object]() table[T] { return table[T]{items: map[types.NamespacedName]T{}} }

func keyOf(o metav1.Object) types.NamespacedName {
	return types.NamespacedName{Namespace: o.GetNamespace(), Name: o.GetName()}
}

func (t *table[T]) get(k types.NamespacedName) (T, bool) {
	o, ok := t.items[k]
	if !ok {
		var zero T
		return zero, false
	}
	return o.DeepCopyObject().(T), true
}

// peek returns the stored object itself; callers must not mutate it.
func (t *table[T]) peek(k types.NamespacedName) (T, bool) {
	o, ok := t.items[k]
	return o, ok
}

// put stores a copy of o and returns the stored copy (for persist).
func (t *table[T]) put(o T) T {
	c := o.DeepCopyObject().(T)
	t.items[keyOf(o)] = c
	return c
}

// putOwned stores o itself: the caller built it for the table and never
// touches it again, which saves a deep copy on the hot write paths.
func (t *table[T]) putOwned(o T) { t.items[keyOf(o)] = o }

func (t *table[T]) delete(k types.NamespacedName) { delete(t.items, k) }

// list returns copies of the objects matching keep (all when nil), sorted by
// namespace then name.
func (t *table[T]) list(keep func(T) bool) []T {
	out := t.listShared(keep)
	for i, o := range out {
		out[i] = o.DeepCopyObject().(T)
	}
	return out
}

// listShared is list without the copies: the stored objects themselves,
// which callers must not modify.
func (t *table[T]) listShared(keep func(T) bool) []T {
	out := make([]T, 0)
	for _, o := range t.items {
		if keep == nil || keep(o) {
			out = append(out, o)
		}
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].GetNamespace() != out[j].GetNamespace() {
			return out[i].GetNamespace() < out[j].GetNamespace()
		}
		return out[i].GetName() < out[j].GetName()
	})
	return out
}

// KeyOf returns the hub key of an object.
func KeyOf(o metav1.Object) types.NamespacedName { return keyOf(o) }
