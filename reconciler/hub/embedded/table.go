package embedded

import (
	"slices"
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
//
// A table made with newGroupedTable also files every object under its
// group (the placement of a binding or snapshot) as it is put, replaced
// and deleted, so listing one placement's objects reads that placement's
// and not the whole table: at 100 placements of 100 clusters each, every
// engine pass listed 10,000 bindings to keep 100.
type table[T object] struct {
	items map[types.NamespacedName]T
	// groupOf names an object's group (nil: the table has no groups);
	// groups holds the keys of each group's objects, and no empty group.
	groupOf func(T) types.NamespacedName
	groups  map[types.NamespacedName]map[types.NamespacedName]struct{}
	// all is every object, sorted, as listShared(nil) last returned it;
	// nil once a write changed the table. Every pass of a run lists the
	// 1,000 members, which change rarely: sorting them each time was half
	// of what placing a run's clusters in stages cost.
	all []T
}

func newTable[T object]() table[T] { return table[T]{items: map[types.NamespacedName]T{}} }

// newGroupedTable is a table whose objects can be listed by group.
func newGroupedTable[T object](groupOf func(T) types.NamespacedName) table[T] {
	return table[T]{items: map[types.NamespacedName]T{}, groupOf: groupOf,
		groups: map[types.NamespacedName]map[types.NamespacedName]struct{}{}}
}

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
	t.putOwned(c)
	return c
}

// putOwned stores o itself: the caller built it for the table and never
// touches it again, which saves a deep copy on the hot write paths.
func (t *table[T]) putOwned(o T) {
	k := keyOf(o)
	if t.groupOf != nil {
		g := t.groupOf(o)
		if old, ok := t.items[k]; ok {
			if og := t.groupOf(old); og != g {
				t.unfile(og, k)
			}
		}
		keys := t.groups[g]
		if keys == nil {
			keys = map[types.NamespacedName]struct{}{}
			t.groups[g] = keys
		}
		keys[k] = struct{}{}
	}
	t.items[k] = o
	t.all = nil
}

func (t *table[T]) delete(k types.NamespacedName) {
	if old, ok := t.items[k]; ok && t.groupOf != nil {
		t.unfile(t.groupOf(old), k)
	}
	delete(t.items, k)
	t.all = nil
}

// unfile takes k out of group g, and drops the group when it empties.
func (t *table[T]) unfile(g, k types.NamespacedName) {
	delete(t.groups[g], k)
	if len(t.groups[g]) == 0 {
		delete(t.groups, g)
	}
}

// list returns copies of the objects matching keep (all when nil), sorted by
// namespace then name.
func (t *table[T]) list(keep func(T) bool) []T {
	return copies(t.listShared(keep))
}

// listShared is list without the copies: the stored objects themselves,
// which callers must not modify.
func (t *table[T]) listShared(keep func(T) bool) []T {
	if keep == nil && t.all != nil {
		return slices.Clone(t.all)
	}
	out := make([]T, 0)
	for _, o := range t.items {
		if keep == nil || keep(o) {
			out = append(out, o)
		}
	}
	out = sorted(out)
	if keep == nil {
		t.all = slices.Clone(out)
	}
	return out
}

// listGroup returns copies of group g's objects, sorted by namespace then
// name; the table must have groups.
func (t *table[T]) listGroup(g types.NamespacedName) []T {
	return copies(t.listGroupShared(g))
}

// listGroupShared is listGroup without the copies, on listShared's terms.
func (t *table[T]) listGroupShared(g types.NamespacedName) []T {
	keys := t.groups[g]
	out := make([]T, 0, len(keys))
	for k := range keys {
		out = append(out, t.items[k])
	}
	return sorted(out)
}

func copies[T object](objs []T) []T {
	for i, o := range objs {
		objs[i] = o.DeepCopyObject().(T)
	}
	return objs
}

func sorted[T object](objs []T) []T {
	sort.Slice(objs, func(i, j int) bool {
		if objs[i].GetNamespace() != objs[j].GetNamespace() {
			return objs[i].GetNamespace() < objs[j].GetNamespace()
		}
		return objs[i].GetName() < objs[j].GetName()
	})
	return objs
}

// KeyOf returns the hub key of an object.
func KeyOf(o metav1.Object) types.NamespacedName { return keyOf(o) }
