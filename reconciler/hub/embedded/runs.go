package embedded

import (
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"

	fleet "github.com/gitfleet/gitfleet/api/v1beta1"
	"github.com/gitfleet/gitfleet/reconciler/snapshothistory"
)

// runTable is the table of update runs: a table whose finished runs are
// kept as husks (husk.go), each whole again whenever it is read. Its
// methods are the table's, and hand out whole runs only.
type runTable struct {
	runs table[*fleet.UpdateRun]
	// packed holds the packed clusters of each husk in runs; a run
	// without an entry is stored whole.
	packed map[types.NamespacedName][]byte
}

func newRunTable() runTable {
	return runTable{runs: newTable[*fleet.UpdateRun](), packed: map[types.NamespacedName][]byte{}}
}

// whole is the stored run o under k, unhusked if it is a husk: then a new
// object that shares the husk's other parts.
func (t *runTable) whole(k types.NamespacedName, o *fleet.UpdateRun) *fleet.UpdateRun {
	packed, ok := t.packed[k]
	if !ok {
		return o
	}
	w, err := unhusk(o, packed)
	must(err)
	return w
}

// copyOf is a deep copy of the stored run o under k, whole.
func (t *runTable) copyOf(k types.NamespacedName, o *fleet.UpdateRun) *fleet.UpdateRun {
	c := o.DeepCopy()
	if packed, ok := t.packed[k]; ok {
		must(unpackClusters(packed, &c.Status))
	}
	return c
}

// must panics on an error that cannot happen: husk checked that what it
// packed unpacks.
func must(err error) {
	if err != nil {
		panic("embedded hub: " + err.Error())
	}
}

func (t *runTable) get(k types.NamespacedName) (*fleet.UpdateRun, bool) {
	o, ok := t.runs.peek(k)
	if !ok {
		return nil, false
	}
	return t.copyOf(k, o), true
}

// peek returns the stored run, whole; callers must not mutate it.
func (t *runTable) peek(k types.NamespacedName) (*fleet.UpdateRun, bool) {
	o, ok := t.runs.peek(k)
	if !ok {
		return nil, false
	}
	return t.whole(k, o), true
}

// head is the stored run as it is kept, a husk not unpacked (its stages
// without their clusters): enough to read its metadata and spec. Callers
// must not mutate it.
func (t *runTable) head(k types.NamespacedName) (*fleet.UpdateRun, bool) {
	return t.runs.peek(k)
}

// heads returns copies of the runs as they are kept (head), sorted by
// namespace then name.
func (t *runTable) heads() []*fleet.UpdateRun {
	out := t.runs.listShared(nil)
	for i, o := range out {
		out[i] = o.DeepCopy()
	}
	return out
}

// put stores a copy of o and returns the copy, whole (for persist).
func (t *runTable) put(o *fleet.UpdateRun) *fleet.UpdateRun {
	c := o.DeepCopy()
	t.putOwned(c)
	return c
}

// putOwned stores o, as its husk when it has finished; o itself is never
// modified, so the caller may still hand it to the Store.
func (t *runTable) putOwned(o *fleet.UpdateRun) {
	k := keyOf(o)
	delete(t.packed, k)
	if snapshothistory.Finished(o) {
		if h, packed, ok := husk(o); ok {
			t.runs.putOwned(h)
			t.packed[k] = packed
			return
		}
	}
	t.runs.putOwned(o)
}

func (t *runTable) delete(k types.NamespacedName) {
	t.runs.delete(k)
	delete(t.packed, k)
}

// list returns copies of the runs, whole and sorted by namespace then
// name.
func (t *runTable) list() []*fleet.UpdateRun {
	out := t.runs.listShared(nil)
	for i, o := range out {
		out[i] = t.copyOf(keyOf(o), o)
	}
	return out
}

// listShared is list without copies of the runs stored whole, which
// callers must not modify; a husk is unhusked into a new object that
// shares the husk's other parts.
func (t *runTable) listShared() []*fleet.UpdateRun {
	out := t.runs.listShared(nil)
	for i, o := range out {
		out[i] = t.whole(keyOf(o), o)
	}
	return out
}

// listUnfinishedShared is listShared of the runs that have not finished;
// it never unpacks a husk, which is a finished run.
func (t *runTable) listUnfinishedShared() []*fleet.UpdateRun {
	all := t.runs.listShared(nil)
	out := all[:0]
	for _, o := range all {
		if _, husk := t.packed[keyOf(o)]; !husk && !snapshothistory.Finished(o) {
			out = append(out, o)
		}
	}
	return out
}

// restore puts o in the table if it is a run.
func (t *runTable) restore(o runtime.Object) bool {
	r, ok := o.(*fleet.UpdateRun)
	if ok {
		t.put(r)
	}
	return ok
}
