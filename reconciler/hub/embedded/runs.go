package embedded

import (
	"fmt"
	"slices"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"

	fleet "github.com/gitfleet/gitfleet/api/v1beta1"
	"github.com/gitfleet/gitfleet/reconciler/hub"
	"github.com/gitfleet/gitfleet/reconciler/snapshothistory"
)

// FinishedRunsPacked is how many finished runs, the last to finish, keep
// their packed clusters in memory. An older one keeps only its husk (its
// metadata, spec and status without the clusters: all that the engine's
// start, admission and listing without clusters read) and its clusters
// are read back from the Store when a reader needs the run whole: 35 KB
// of packed clusters a run of 1,000 clusters would otherwise pile up with
// every run that ends. Ten covers the runs a person still looks at or
// re-applies soon, as status.DefaultEndedKept does for the status tree.
const FinishedRunsPacked = 10

// runTable is the table of update runs: a table whose finished runs are
// kept as husks (husk.go), each whole again whenever it is read. Its
// methods are the table's, and hand out whole runs only.
type runTable struct {
	runs table[*fleet.UpdateRun]
	// packed holds the packed clusters of each husk in runs; a run
	// without an entry is stored whole.
	packed map[types.NamespacedName][]byte
	// finished orders the husks of packed by when they were husked
	// (finishSeq counts); unpacked holds the husks whose clusters were
	// dropped (FinishedRunsPacked) and are read back through durable.
	finished  map[types.NamespacedName]uint64
	finishSeq uint64
	unpacked  map[types.NamespacedName]struct{}
	// restored holds the husks of runs just read from the Store
	// (Restore), which therefore holds them as they are.
	restored map[types.NamespacedName]struct{}
	// durable reads runs back from the Store; nil when the Store cannot
	// (then every husk keeps its clusters).
	durable hub.DurableReader
}

func newRunTable(store Store) runTable {
	durable, _ := store.(hub.DurableReader)
	return runTable{runs: newTable[*fleet.UpdateRun](), packed: map[types.NamespacedName][]byte{},
		finished: map[types.NamespacedName]uint64{}, unpacked: map[types.NamespacedName]struct{}{},
		restored: map[types.NamespacedName]struct{}{}, durable: durable}
}

// whole is the stored run o under k, unhusked if it is a husk: then a new
// object that shares the husk's other parts.
func (t *runTable) whole(k types.NamespacedName, o *fleet.UpdateRun) (*fleet.UpdateRun, error) {
	if _, ok := t.unpacked[k]; ok {
		return t.readBack(k, o)
	}
	packed, ok := t.packed[k]
	if !ok {
		return o, nil
	}
	w, err := unhusk(o, packed)
	must(err)
	return w, nil
}

// copyOf is a deep copy of the stored run o under k, whole.
func (t *runTable) copyOf(k types.NamespacedName, o *fleet.UpdateRun) (*fleet.UpdateRun, error) {
	c := o.DeepCopy()
	if _, ok := t.unpacked[k]; ok {
		return t.readBack(k, c)
	}
	if packed, ok := t.packed[k]; ok {
		must(unpackClusters(packed, &c.Status))
	}
	return c, nil
}

// readBack is husk h of a run whose clusters were dropped, whole again: a
// new object with h's other parts and the clusters the Store holds, which
// unpack checked were the packed ones when it dropped them.
func (t *runTable) readBack(k types.NamespacedName, h *fleet.UpdateRun) (*fleet.UpdateRun, error) {
	ref := ObjectRef{Kind: fleet.UpdateRunKind(k.Namespace), Key: k}
	obj, ok, err := t.durable.ReadDurable(ref)
	if err != nil {
		return nil, fmt.Errorf("reading back update run %s: %w", k, err)
	}
	stored, isRun := obj.(*fleet.UpdateRun)
	if !ok || !isRun || !sameStages(stored, h) {
		return nil, fmt.Errorf("reading back update run %s: the store does not hold it as it finished", k)
	}
	return withClustersOf(h, stored), nil
}

// sameStages reports whether run has as many stages as husk h, and a
// deletion stage if h has one, so that h's clusters can be taken from it.
func sameStages(run, h *fleet.UpdateRun) bool {
	return len(run.Status.StagesStatus) == len(h.Status.StagesStatus) &&
		(run.Status.DeletionStageStatus == nil) == (h.Status.DeletionStageStatus == nil)
}

// withClustersOf is husk h whole, with the clusters of run (sameStages):
// a new object that shares h's other parts and run's clusters.
func withClustersOf(h, run *fleet.UpdateRun) *fleet.UpdateRun {
	c := *h
	st := &c.Status
	st.StagesStatus = slices.Clone(h.Status.StagesStatus)
	for i := range st.StagesStatus {
		st.StagesStatus[i].Clusters = run.Status.StagesStatus[i].Clusters
	}
	if d := h.Status.DeletionStageStatus; d != nil {
		dc := *d
		dc.Clusters = run.Status.DeletionStageStatus.Clusters
		st.DeletionStageStatus = &dc
	}
	return &c
}

// unpack drops the packed clusters of the husks beyond the
// FinishedRunsPacked last husked, each once the Store holds it durably
// with the very clusters packed, so that reading it back gives the run as
// it was written. While the Store does not hold the oldest yet, nothing
// is dropped (the next put tries again); a husk it holds otherwise (a
// time it does not keep exactly) stays packed for good.
func (t *runTable) unpack() {
	if t.durable == nil {
		return
	}
	for len(t.finished) > FinishedRunsPacked {
		var oldest types.NamespacedName
		first := true
		for k, seq := range t.finished {
			if first || seq < t.finished[oldest] {
				oldest, first = k, false
			}
		}
		h, _ := t.runs.peek(oldest)
		if _, restored := t.restored[oldest]; !restored {
			obj, ok, err := t.durable.ReadDurable(ObjectRef{Kind: fleet.UpdateRunKind(oldest.Namespace), Key: oldest})
			if err != nil || !ok {
				return
			}
			stored, isRun := obj.(*fleet.UpdateRun)
			if !isRun || !sameStages(stored, h) || !sameClusters(withClustersOf(h, stored), t.copyPacked(oldest, h)) {
				delete(t.finished, oldest)
				continue
			}
		}
		delete(t.finished, oldest)
		delete(t.restored, oldest)
		delete(t.packed, oldest)
		t.unpacked[oldest] = struct{}{}
	}
}

// copyPacked is husk h under k whole from its packed clusters.
func (t *runTable) copyPacked(k types.NamespacedName, h *fleet.UpdateRun) *fleet.UpdateRun {
	w, err := unhusk(h, t.packed[k])
	must(err)
	return w
}

// sameClusters reports whether a and b, of the same stages, have the same
// clusters, as strictly as husk checks its packing.
func sameClusters(a, b *fleet.UpdateRun) bool {
	for i := range a.Status.StagesStatus {
		if !fleet.SameClusterUpdatingStatuses(a.Status.StagesStatus[i].Clusters, b.Status.StagesStatus[i].Clusters) {
			return false
		}
	}
	d := a.Status.DeletionStageStatus
	return d == nil || fleet.SameClusterUpdatingStatuses(d.Clusters, b.Status.DeletionStageStatus.Clusters)
}

// must panics on an error that cannot happen: husk checked that what it
// packed unpacks.
func must(err error) {
	if err != nil {
		panic("embedded hub: " + err.Error())
	}
}

func (t *runTable) get(k types.NamespacedName) (*fleet.UpdateRun, bool, error) {
	o, ok := t.runs.peek(k)
	if !ok {
		return nil, false, nil
	}
	c, err := t.copyOf(k, o)
	return c, err == nil, err
}

// peek returns the stored run, whole; callers must not mutate it.
func (t *runTable) peek(k types.NamespacedName) (*fleet.UpdateRun, bool, error) {
	o, ok := t.runs.peek(k)
	if !ok {
		return nil, false, nil
	}
	w, err := t.whole(k, o)
	return w, err == nil, err
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
func (t *runTable) putOwned(o *fleet.UpdateRun) { t.keep(o, false) }

// keep is putOwned; restored says o was just read from the Store.
func (t *runTable) keep(o *fleet.UpdateRun, restored bool) {
	k := keyOf(o)
	t.forget(k)
	if restored {
		t.restored[k] = struct{}{}
	}
	if snapshothistory.Finished(o) {
		if h, packed, ok := husk(o); ok {
			t.runs.putOwned(h)
			t.packed[k] = packed
			t.finishSeq++
			t.finished[k] = t.finishSeq
			t.unpack()
			return
		}
	}
	t.runs.putOwned(o)
}

// forget drops what the table knows of k's clusters.
func (t *runTable) forget(k types.NamespacedName) {
	delete(t.packed, k)
	delete(t.finished, k)
	delete(t.unpacked, k)
	delete(t.restored, k)
}

func (t *runTable) delete(k types.NamespacedName) {
	t.runs.delete(k)
	t.forget(k)
}

// list returns copies of the runs, whole and sorted by namespace then
// name.
func (t *runTable) list() ([]*fleet.UpdateRun, error) {
	out := t.runs.listShared(nil)
	for i, o := range out {
		c, err := t.copyOf(keyOf(o), o)
		if err != nil {
			return nil, err
		}
		out[i] = c
	}
	return out, nil
}

// listShared is list without copies of the runs stored whole, which
// callers must not modify; a husk is unhusked into a new object that
// shares the husk's other parts.
func (t *runTable) listShared() ([]*fleet.UpdateRun, error) {
	out := t.runs.listShared(nil)
	for i, o := range out {
		w, err := t.whole(keyOf(o), o)
		if err != nil {
			return nil, err
		}
		out[i] = w
	}
	return out, nil
}

// listUnfinishedShared is listShared of the runs that have not finished;
// it never unpacks a husk, which is a finished run.
func (t *runTable) listUnfinishedShared() []*fleet.UpdateRun {
	all := t.runs.listShared(nil)
	out := all[:0]
	for _, o := range all {
		k := keyOf(o)
		_, husk := t.packed[k]
		_, unpacked := t.unpacked[k]
		if !husk && !unpacked && !snapshothistory.Finished(o) {
			out = append(out, o)
		}
	}
	return out
}

// restore puts o in the table if it is a run; the Store it came from
// holds it as it is, so its clusters may be dropped without reading it
// back (unpack).
func (t *runTable) restore(o runtime.Object) bool {
	r, ok := o.(*fleet.UpdateRun)
	if ok {
		t.keep(r.DeepCopy(), true)
	}
	return ok
}
