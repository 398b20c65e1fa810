package status

import (
	"bytes"
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"io/fs"
	"path"
	"sort"
	"strings"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/runtime"

	fleet "github.com/gitfleet/gitfleet/api/v1beta1"
	"github.com/gitfleet/gitfleet/internal/clock"
	"github.com/gitfleet/gitfleet/reconciler/hub"
)

// DefaultInterval is how often, at most, TreeStore commits non-urgent
// changes: progress that guards no side effect is batched into one commit.
const DefaultInterval = 2 * time.Second

// DefaultEndedKept is how many ended runs TreeStore keeps its record of
// in memory (TreeStore.EndedKept): the runs that ended last, which are
// the ones a person may still edit, delete or re-apply soon.
const DefaultEndedKept = 10

// TreeStore is a hub.Store over the status tree. Put and Delete
// only record the latest state of each object in memory (cheap: the hub calls
// them with its lock held); Flush encodes what changed, drops writes whose
// bytes equal what is already stored, and hands the rest to the Committer as
// one Changeset with a message from Summarize.
//
// Urgent flushes commit at once. Non-urgent ones commit at most once per
// Interval: a flush that comes too soon arms a timer on the clock that
// commits the batch when the interval is over (and retries, every
// Interval, while the Committer fails). The end of a run (Succeeded or
// Failed) is the exception: it is what people and pipelines wait for, it
// has nothing left to be batched with, and it happens once per run, so
// the flush that carries it commits at once.
type TreeStore struct {
	files     Files
	committer Committer
	clock     clock.Clock

	// Interval bounds how often non-urgent flushes commit; set it before
	// use. Zero or less commits every flush at once.
	Interval time.Duration
	// EndedKept is how many ended runs, the last to end, keep their
	// record in memory: the paths of their files, their own file and the
	// digests of their parts (about 40 KB a run of 1,000 clusters, and
	// more with its stage layout). The records of older ones are dropped
	// and read back from Files whenever the store needs them again (the
	// run is put or deleted, or its layout is its placement's again), so
	// what is written is the same; only that read costs time. Set it
	// before use; zero or less keeps none.
	EndedKept int
	// OnCommit, if set, is called after every attempted commit with the
	// changes, the lag from the oldest change in it to the end of the
	// commit, and the Committer's error. The daemon feeds metrics from it.
	OnCommit func(changes Changeset, lag time.Duration, err error)
	// OnError, if set, receives errors of commits that the timer made,
	// which have no caller to return them to.
	OnError func(error)

	flushMu sync.Mutex // serializes commits; taken before mu

	mu     sync.Mutex
	latest map[hub.ObjectRef]runtime.Object // Put objects (nil: deleted) not yet encoded
	paths  map[hub.ObjectRef][]string       // the files of each known object, its own file first
	owners map[string]hub.ObjectRef         // inverse of paths
	cache  map[hub.ObjectRef]*encoding      // the last encoding of each object
	stored map[string][]byte                // file content as last loaded or committed
	// digests stand for the stored content of the part files of ended
	// runs (compactEndedLocked): the content itself is not kept.
	digests map[string][sha256.Size]byte
	desired map[string][]byte         // encoded changes not yet committed; nil: delete
	written map[string]runtime.Object // the object behind each desired write
	// runLayouts are the stage layouts of the known split runs, and
	// layouts the one of the newest run of each placement: how the
	// placement's parts and bindings are grouped (stageLayout).
	runLayouts map[hub.ObjectRef]*stageLayout
	layouts    map[placementKey]*stageLayout
	// bindings are the known bindings of each placement (by its tracking
	// label), and placementOf the placement of each: a new layout moves
	// the bindings of one placement, which must not cost a walk over
	// every file of the fleet (100 runs starting at once walked 10,000
	// bindings 100 times).
	bindings    map[placementKey]map[hub.ObjectRef]struct{}
	placementOf map[hub.ObjectRef]placementKey
	// ended holds the runs that had ended as last loaded or encoded and
	// whose record is in memory, each with the order it ended in (endSeq
	// counts); ending says one ended since then and the next flush
	// commits at once. forgotten holds the ended runs whose record was
	// dropped (forgetEndedLocked), each with the path of its own file.
	ended     map[hub.ObjectRef]uint64
	endSeq    uint64
	forgotten map[hub.ObjectRef]string
	ending    bool
	// compact holds the ended runs whose parts' content and encoding may
	// still be held (compactEndedLocked).
	compact map[hub.ObjectRef]bool
	since   time.Time // when the oldest uncommitted change was made
	last    time.Time // end of the last commit
	timer   clock.Timer
}

var _ hub.SharingStore = (*TreeStore)(nil)

// NewTreeStore returns a TreeStore loading from files and committing through
// committer, batching on clk.
func NewTreeStore(files Files, committer Committer, clk clock.Clock) *TreeStore {
	s := &TreeStore{files: files, committer: committer, clock: clk, Interval: DefaultInterval, EndedKept: DefaultEndedKept}
	s.reset()
	return s
}

func (s *TreeStore) reset() {
	s.latest = map[hub.ObjectRef]runtime.Object{}
	s.paths = map[hub.ObjectRef][]string{}
	s.owners = map[string]hub.ObjectRef{}
	s.cache = map[hub.ObjectRef]*encoding{}
	s.stored = map[string][]byte{}
	s.digests = map[string][sha256.Size]byte{}
	s.desired = map[string][]byte{}
	s.written = map[string]runtime.Object{}
	s.runLayouts = map[hub.ObjectRef]*stageLayout{}
	s.layouts = map[placementKey]*stageLayout{}
	s.bindings = map[placementKey]map[hub.ObjectRef]struct{}{}
	s.placementOf = map[hub.ObjectRef]placementKey{}
	s.ended = map[hub.ObjectRef]uint64{}
	s.forgotten = map[hub.ObjectRef]string{}
	s.compact = map[hub.ObjectRef]bool{}
	s.ending = false
	s.since = time.Time{}
}

// runEnded reports whether obj is a run that has ended: Succeeded or Failed.
func runEnded(obj runtime.Object) bool {
	run, ok := obj.(*fleet.UpdateRun)
	if !ok {
		return false
	}
	switch run.Phase() {
	case fleet.PhaseSucceeded, fleet.PhaseFailed:
		return true
	}
	return false
}

// learnLayout records the stage layout of run (nil: deleted) and elects
// the newest run's layout for its placement; moving says whether stored
// bindings move when the elected layout changes (not while loading, where
// the files are where they are).
func (s *TreeStore) learnLayout(ref hub.ObjectRef, run *fleet.UpdateRun, moving bool) error {
	old := s.runLayouts[ref]
	var l *stageLayout
	if run != nil {
		l = layoutOfRun(run, old)
	}
	if l == old {
		return nil
	}
	if l == nil {
		delete(s.runLayouts, ref)
	} else {
		s.runLayouts[ref] = l
	}
	for _, k := range []*stageLayout{old, l} {
		if k == nil {
			continue
		}
		newest, err := s.newestLayoutLocked(k.placement)
		if err != nil {
			return err // the bindings stay where they are
		}
		if newest == s.layouts[k.placement] {
			continue
		}
		if newest == nil {
			delete(s.layouts, k.placement)
		} else {
			s.layouts[k.placement] = newest
		}
		if moving {
			s.moveBindingsLocked(k.placement, newest)
		}
	}
	return nil
}

// newestLayoutLocked elects the layout of the newest run of placement.
// A forgotten run's layout is a husk that knows only how new it is; when
// it is elected, the run is read back to learn its stages.
func (s *TreeStore) newestLayoutLocked(placement placementKey) (*stageLayout, error) {
	for {
		var newest *stageLayout
		for _, c := range s.runLayouts {
			if c.placement == placement && c.newer(newest) {
				newest = c
			}
		}
		if newest == nil || newest.husk == nil {
			return newest, nil
		}
		if err := s.recallLocked(*newest.husk); err != nil {
			return nil, err
		}
	}
}

// moveBindingsLocked moves the stored bindings of placement to where
// layout puts them, at once: a binding waiting for its next write to move
// would keep the placement's flat folder, which lists every cluster, in
// the commits of the whole run. A move writes no new blob, only trees.
// Bindings about to be encoded move with their new content instead.
//
// Only the placement's own bindings are looked at (s.bindings): the store
// holds every binding of the fleet, and parsing each path on every run's
// start was a twentieth of serve's CPU for 100 concurrent runs, walking
// them all still 4%.
func (s *TreeStore) moveBindingsLocked(placement placementKey, layout *stageLayout) {
	folder := path.Join(StatusDir, bindingsDir, placement.namespace, placement.name) + "/"
	for ref := range s.bindings[placement] {
		paths := s.paths[ref]
		if len(paths) != 1 || s.latest[ref] != nil || !strings.HasPrefix(paths[0], folder) {
			continue
		}
		p := paths[0]
		r, err := RefFor(p)
		if err != nil || r.Cluster == "" || r.Namespace != placement.namespace || r.Placement != placement.name {
			continue
		}
		q := stagedBindingPath(unstaged(p), r.Cluster, layout)
		if q == p {
			continue
		}
		data, pending := s.desired[p]
		if !pending {
			data = s.stored[p]
		}
		if data == nil {
			continue
		}
		s.desired[q], s.written[q] = data, s.written[p]
		s.desired[p] = nil
		delete(s.written, p)
		delete(s.owners, p)
		s.owners[q] = ref
		s.paths[ref] = []string{q}
		if enc := s.cache[ref]; enc != nil {
			enc.paths = []string{q}
		}
	}
}

// trackBindingLocked records which placement the binding behind ref
// belongs to (nil: it was deleted), for moveBindingsLocked.
func (s *TreeStore) trackBindingLocked(ref hub.ObjectRef, obj runtime.Object) {
	b, isBinding := obj.(*fleet.Binding)
	key := placementKey{}
	if isBinding {
		key = placementKey{b.Namespace, b.Labels[fleet.PlacementTrackingLabel]}
	}
	old, known := s.placementOf[ref]
	if known && (!isBinding || old != key) {
		delete(s.bindings[old], ref)
		if len(s.bindings[old]) == 0 {
			delete(s.bindings, old)
		}
		delete(s.placementOf, ref)
	}
	if !isBinding || known && old == key {
		return
	}
	set := s.bindings[key]
	if set == nil {
		set = map[hub.ObjectRef]struct{}{}
		s.bindings[key] = set
	}
	set[ref] = struct{}{}
	s.placementOf[ref] = key
}

// layoutOf is the stage layout obj's files follow: its placement's, for a
// placement or a binding; nil for anything else.
func (s *TreeStore) layoutOf(obj runtime.Object) *stageLayout {
	switch o := obj.(type) {
	case *fleet.Placement:
		return s.layouts[placementKey{o.Namespace, o.Name}]
	case *fleet.Binding:
		return s.layouts[placementKey{o.Namespace, o.Labels[fleet.PlacementTrackingLabel]}]
	}
	return nil
}

// Snapshot is Files that hold a copy of the trees in memory only for
// Load (the daemon reads them from one commit at start): the store
// releases them once loaded, since the copy would otherwise keep the first
// version of every file alive for the life of the process (45 MB at
// 10,000 clusters). Later reads of a released Snapshot find no file.
type Snapshot interface {
	Files
	Release()
}

// Load implements hub.Store: it reads every object of the status and
// approvals trees (ReadObjects: sorted by path, split objects assembled) and
// forgets any unflushed change. A file that does not decode, or that sits
// where its object does not belong, is an error naming the file; the other
// objects are still returned.
func (s *TreeStore) Load(ctx context.Context) ([]runtime.Object, error) {
	s.flushMu.Lock()
	defer s.flushMu.Unlock()
	var stored []StoredObject
	var errs []error
	for _, root := range []string{StatusDir, ApprovalsDir} {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		got, rerrs := ReadObjects(s.files, root)
		stored = append(stored, got...)
		errs = append(errs, rerrs...)
	}
	sort.Slice(stored, func(i, j int) bool { return stored[i].Path < stored[j].Path })

	if snap, ok := s.files.(Snapshot); ok {
		snap.Release()
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.stopTimerLocked()
	s.reset()
	objs := make([]runtime.Object, 0, len(stored))
	for _, so := range stored {
		ref := refOf(so.Object)
		paths := []string{so.Path}
		for p, data := range so.Files {
			s.stored[p] = data
			s.owners[p] = ref
			if p != so.Path {
				paths = append(paths, p)
			}
		}
		sort.Strings(paths[1:])
		s.paths[ref] = paths
		s.trackBindingLocked(ref, so.Object)
		if run, ok := so.Object.(*fleet.UpdateRun); ok {
			_ = s.learnLayout(ref, run, false) // no run is forgotten yet
			if runEnded(run) {
				s.endedLocked(ref)
			}
		}
		objs = append(objs, so.Object)
	}
	s.compactEndedLocked()
	s.forgetEndedLocked()
	return objs, errors.Join(errs...)
}

// Refresh re-reads the given files, which someone else changed (a person's
// commit under approvals/ or status/), so that what TreeStore believes is
// stored stays true: otherwise a later write of bytes equal to the old
// content would be dropped as a no-op, and the person's version would stay.
// A missing file is forgotten.
func (s *TreeStore) Refresh(paths ...string) error {
	s.flushMu.Lock()
	defer s.flushMu.Unlock()
	type read struct {
		data []byte
		ok   bool
	}
	got := map[string]read{}
	var errs []error
	for _, p := range paths {
		data, err := s.files.Read(p)
		switch {
		case err == nil:
			got[p] = read{data, true}
		case errors.Is(err, fs.ErrNotExist):
			got[p] = read{}
		default:
			errs = append(errs, fmt.Errorf("%s: %w", p, err))
		}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	for p, r := range got {
		if r.ok {
			s.setStoredLocked(p, r.data)
			if ref, ok := s.owners[p]; ok && s.ended[ref] != 0 {
				s.compact[ref] = true
			}
		} else {
			s.forgetStoredLocked(p)
		}
	}
	return errors.Join(errs...)
}

// Forget drops what the store believes is stored at p, because someone
// else changed the file (a person's commit that broke it): the next Flush
// writes the object that belongs there again.
func (s *TreeStore) Forget(p string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.forgetStoredLocked(p)
}

// Put implements hub.Store.
func (s *TreeStore) Put(ref hub.ObjectRef, obj runtime.Object) {
	s.record(ref, obj.DeepCopyObject())
}

// PutShared implements hub.SharingStore: obj is recorded without a copy,
// which the store can afford because it never modifies what it records
// (encoding and split only read).
func (s *TreeStore) PutShared(ref hub.ObjectRef, obj runtime.Object) { s.record(ref, obj) }

// Delete implements hub.Store.
func (s *TreeStore) Delete(ref hub.ObjectRef) { s.record(ref, nil) }

func (s *TreeStore) record(ref hub.ObjectRef, obj runtime.Object) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.since.IsZero() {
		s.since = s.clock.Now()
	}
	s.latest[ref] = obj
}

// Flush implements hub.Store; see TreeStore for the batching rules. An
// object that cannot be encoded or placed is reported on every Flush until
// it changes, without holding back the other changes.
func (s *TreeStore) Flush(ctx context.Context, urgent bool) error {
	return s.flush(ctx, urgent, urgent)
}

var _ hub.SealingStore = (*TreeStore)(nil)

// Seal implements hub.SealingStore: what Flush(ctx, urgent) would commit
// is fixed now, every object recorded before; objects recorded while it
// is committed go into the next flush. finish commits it; the next Seal
// or Flush waits until finish returned.
func (s *TreeStore) Seal(urgent bool) (finish func(context.Context) error) {
	return s.seal(urgent, urgent)
}

// flush commits when now is true or the interval has passed; urgent is what
// the Committer is told.
func (s *TreeStore) flush(ctx context.Context, urgent, now bool) error {
	return s.seal(urgent, now)(ctx)
}

// seal encodes and diffs under the lock, then leaves the commit to the
// finish it returns: records go on meanwhile (the diff is against what is
// stored, which only a finished commit changes). flushMu is held from seal
// until its finish returned, so flushes never overlap.
func (s *TreeStore) seal(urgent, now bool) (finish func(context.Context) error) {
	s.flushMu.Lock()
	done := func(err error) func(context.Context) error {
		s.flushMu.Unlock()
		return func(context.Context) error { return err }
	}

	s.mu.Lock()
	encodeErr := s.encodeLocked()
	s.pruneLocked()
	changes, objects := s.diffLocked()
	before := make(map[string][]byte, len(changes.Writes))
	for p := range changes.Writes {
		before[p] = s.stored[p]
	}
	if changes.Empty() {
		s.compactEndedLocked()
		s.forgetEndedLocked()
		s.since = time.Time{}
		s.ending = false
		if len(s.latest) == 0 {
			s.stopTimerLocked()
		}
		s.mu.Unlock()
		return done(encodeErr)
	}
	at := s.clock.Now()
	if wait := s.last.Add(s.Interval).Sub(at); !now && !s.ending && s.Interval > 0 && !s.last.IsZero() && wait > 0 {
		s.armLocked(wait)
		s.mu.Unlock()
		return done(encodeErr)
	}
	s.stopTimerLocked()
	// Changes recorded while the commit runs start a new lag measurement.
	since := s.since
	s.since = time.Time{}
	ending := s.ending
	s.ending = false
	s.mu.Unlock()
	return func(ctx context.Context) error {
		defer s.flushMu.Unlock()
		return s.commit(ctx, changes, objects, before, since, ending, urgent, encodeErr)
	}
}

// commit is a sealed flush's second half: the Committer makes changes
// durable, and only then are they what the store believes stored.
func (s *TreeStore) commit(ctx context.Context, changes Changeset, objects map[string]runtime.Object, before map[string][]byte,
	since time.Time, ending, urgent bool, encodeErr error) error {
	whole, wholeObjs := wholeObjects(changes, objects)
	err := s.committer.Commit(ctx, changes, Summarize(whole, wholeObjs, before), urgent)
	end := s.clock.Now()
	if s.OnCommit != nil {
		s.OnCommit(changes, end.Sub(since), err)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if err != nil {
		if s.since.IsZero() || since.Before(s.since) {
			s.since = since
		}
		s.ending = s.ending || ending
		return errors.Join(encodeErr, fmt.Errorf("commit status: %w", err))
	}
	for _, p := range changes.Deletes {
		s.forgetStoredLocked(p)
	}
	for p, data := range changes.Writes {
		s.setStoredLocked(p, data)
	}
	s.pruneLocked()
	s.compactEndedLocked()
	s.forgetEndedLocked()
	s.last = end
	return encodeErr
}

// encodeLocked turns recorded objects into desired file contents. Objects
// that fail stay recorded, so the error repeats until they change.
func (s *TreeStore) encodeLocked() error {
	refs := make([]hub.ObjectRef, 0, len(s.latest))
	for ref := range s.latest {
		refs = append(refs, ref)
	}
	sort.Slice(refs, func(i, j int) bool { return refLess(refs[i], refs[j]) })
	var errs []error
	// A forgotten run that changes is read back first: its files are
	// where the new version is compared, and what a deletion removes.
	failed := map[hub.ObjectRef]bool{}
	for _, ref := range refs {
		if _, ok := s.forgotten[ref]; ok {
			if err := s.recallLocked(ref); err != nil {
				errs = append(errs, err)
				failed[ref] = true
			}
		}
	}
	// Runs first: they decide where their placement's files go.
	for _, ref := range refs {
		var err error
		if failed[ref] {
			continue
		} else if run, ok := s.latest[ref].(*fleet.UpdateRun); ok {
			err = s.learnLayout(ref, run, true)
		} else if _, known := s.runLayouts[ref]; known && s.latest[ref] == nil {
			err = s.learnLayout(ref, nil, true)
		}
		if err != nil {
			errs = append(errs, err)
		}
	}
	for _, ref := range refs {
		if failed[ref] {
			continue // stays recorded: the read is tried again next flush
		}
		obj := s.latest[ref]
		if _, isRun := obj.(*fleet.UpdateRun); isRun || obj == nil {
			ended := runEnded(obj)
			_, wasEnded := s.ended[ref]
			s.ending = s.ending || ended && !wasEnded
			if ended {
				if !wasEnded {
					s.endedLocked(ref)
				}
				s.compact[ref] = true
			} else {
				delete(s.ended, ref)
				delete(s.compact, ref)
			}
		}
		old := s.paths[ref]
		if obj == nil {
			for _, p := range old {
				s.desired[p] = nil
				delete(s.written, p)
				delete(s.owners, p)
			}
			delete(s.paths, ref)
			delete(s.cache, ref)
			delete(s.latest, ref)
			s.trackBindingLocked(ref, nil)
			continue
		}
		enc, err := s.encodeObject(ref, obj)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		for _, p := range enc.paths {
			if owner, taken := s.owners[p]; taken && owner != ref {
				err = fmt.Errorf("%s and %s/%s both belong in %s", describeObject(obj), owner.Kind, owner.Key, p)
				break
			}
		}
		if err != nil {
			errs = append(errs, err)
			continue
		}
		keep := make(map[string]bool, len(enc.paths))
		for _, p := range enc.paths {
			keep[p] = true
		}
		for _, p := range old {
			if !keep[p] {
				s.desired[p] = nil
				delete(s.written, p)
				delete(s.owners, p)
			}
		}
		for i, p := range enc.paths {
			s.owners[p] = ref
			if _, pending := s.desired[p]; !pending && sameSlice(s.stored[p], enc.data[i]) {
				continue // a part reused as it was committed: nothing to write
			}
			s.desired[p], s.written[p] = enc.data[i], obj
		}
		s.paths[ref] = enc.paths
		s.cache[ref] = enc
		s.trackBindingLocked(ref, obj)
		delete(s.latest, ref)
	}
	return errors.Join(errs...)
}

// endedLocked records that the run behind ref ended now, after those
// recorded before it.
func (s *TreeStore) endedLocked(ref hub.ObjectRef) {
	s.endSeq++
	s.ended[ref], s.compact[ref] = s.endSeq, true
}

// forgetEndedLocked drops the records of the ended runs beyond the
// EndedKept that ended last: the paths of their files, what their own
// file holds, the digests of their parts and their stage layout (all
// but how new the run is, while it is not its placement's elected one).
// A run with a change not yet encoded or committed keeps its record.
// recallLocked reads a record back.
func (s *TreeStore) forgetEndedLocked() {
	if len(s.ended) <= max(s.EndedKept, 0) {
		return
	}
	refs := make([]hub.ObjectRef, 0, len(s.ended))
	for ref := range s.ended {
		refs = append(refs, ref)
	}
	sort.Slice(refs, func(i, j int) bool { return s.ended[refs[i]] < s.ended[refs[j]] })
	for _, ref := range refs[:len(refs)-max(s.EndedKept, 0)] {
		paths := s.paths[ref]
		if _, pending := s.latest[ref]; pending || s.compact[ref] || len(paths) == 0 {
			continue
		}
		busy := false
		for _, p := range paths {
			if _, ok := s.desired[p]; ok {
				busy = true
				break
			}
		}
		if busy {
			continue
		}
		for _, p := range paths {
			delete(s.owners, p)
			s.forgetStoredLocked(p)
		}
		s.forgotten[ref] = paths[0]
		delete(s.paths, ref)
		delete(s.cache, ref)
		delete(s.ended, ref)
		if l := s.runLayouts[ref]; l != nil && s.layouts[l.placement] != l {
			s.runLayouts[ref] = &stageLayout{placement: l.placement, created: l.created, run: l.run, husk: &ref}
		}
	}
}

// recallLocked reads the record of the forgotten run behind ref back
// from Files: the paths of its files, what its own file holds, the
// digests of its parts and, if its layout was dropped, its stage layout.
// A file missing there is not known any more (a person removed it).
// The store's lock is held while it reads: this happens only when an
// ended run older than the last EndedKept changes.
func (s *TreeStore) recallLocked(ref hub.ObjectRef) error {
	mainPath := s.forgotten[ref]
	dir := strings.TrimSuffix(mainPath, ".yaml") + partsSuffix
	listed, err := s.files.List(dir)
	if err != nil {
		return fmt.Errorf("reading back %s: %w", mainPath, err)
	}
	paths := []string{mainPath}
	parts := map[string][]byte{}
	for _, p := range listed {
		if m, _, ok := partOf(p); ok && m == mainPath && strings.HasSuffix(p, ".yaml") {
			data, err := s.files.Read(p)
			if errors.Is(err, fs.ErrNotExist) {
				continue
			}
			if err != nil {
				return fmt.Errorf("reading back %s: %w", p, err)
			}
			paths = append(paths, p)
			parts[p] = data
		}
	}
	data, err := s.files.Read(mainPath)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("reading back %s: %w", mainPath, err)
	}
	if err == nil {
		s.setStoredLocked(mainPath, data)
	}
	for p, d := range parts {
		delete(s.stored, p)
		s.digests[p] = sha256.Sum256(d)
	}
	for _, p := range paths {
		s.owners[p] = ref
	}
	s.paths[ref] = paths
	delete(s.forgotten, ref)
	s.endedLocked(ref)
	if l := s.runLayouts[ref]; l != nil && l.husk != nil {
		delete(s.runLayouts, ref)
		if obj, err := DecodeFile(mainPath, data); err == nil && assemble(obj, mainPath, parts) == nil {
			if run, ok := obj.(*fleet.UpdateRun); ok {
				if l := layoutOfRun(run, nil); l != nil {
					s.runLayouts[ref] = l
				}
			}
		}
	}
	return nil
}

// pruneLocked forgets desired changes that are already stored: writes of
// identical bytes and deletions of absent files.
func (s *TreeStore) pruneLocked() {
	for p, data := range s.desired {
		if (data == nil && !s.knownLocked(p)) || (data != nil && s.holdsLocked(p, data)) {
			delete(s.desired, p)
			delete(s.written, p)
		}
	}
}

// setStoredLocked records data as what p holds; forgetStoredLocked that
// p holds nothing.
func (s *TreeStore) setStoredLocked(p string, data []byte) {
	s.stored[p] = data
	delete(s.digests, p)
}

func (s *TreeStore) forgetStoredLocked(p string) {
	delete(s.stored, p)
	delete(s.digests, p)
}

// knownLocked reports whether p holds a file; holdsLocked whether it holds
// exactly data.
func (s *TreeStore) knownLocked(p string) bool {
	_, ok := s.stored[p]
	_, digested := s.digests[p]
	return ok || digested
}

func (s *TreeStore) holdsLocked(p string, data []byte) bool {
	if stored, ok := s.stored[p]; ok {
		return bytes.Equal(stored, data)
	}
	d, ok := s.digests[p]
	return ok && d == sha256.Sum256(data)
}

// compactEndedLocked keeps only a digest of the stored part files of the
// ended runs, and drops their encoding: an ended run changes no more (or
// seldom: a person's edit, its deletion), yet the content of the parts of
// every run that ever ended, ~0.5 MB a run at 1,000 clusters, grew serve's
// memory run after run (BenchmarkHeapAcrossRuns). A write of the same
// bytes is still dropped (holdsLocked); a later change of the run is
// encoded again in full. The run's own file, which commit messages are
// worded against (Summarize), is kept whole.
func (s *TreeStore) compactEndedLocked() {
	for ref := range s.compact {
		if _, pending := s.latest[ref]; pending {
			continue
		}
		if paths := s.paths[ref]; len(paths) > 1 {
			for _, p := range paths[1:] {
				if data, ok := s.stored[p]; ok {
					s.digests[p] = sha256.Sum256(data)
					delete(s.stored, p)
				}
			}
		}
		delete(s.cache, ref)
		delete(s.compact, ref)
	}
}

// diffLocked is the changeset that takes stored to desired (after prune).
func (s *TreeStore) diffLocked() (Changeset, map[string]runtime.Object) {
	ch := Changeset{Writes: map[string][]byte{}}
	objs := map[string]runtime.Object{}
	for p, data := range s.desired {
		if data == nil {
			ch.Deletes = append(ch.Deletes, p)
			continue
		}
		ch.Writes[p] = data
		objs[p] = s.written[p]
	}
	sort.Strings(ch.Deletes)
	return ch, objs
}

func (s *TreeStore) armLocked(wait time.Duration) {
	if s.timer != nil {
		return
	}
	s.timer = s.clock.AfterFunc(wait, s.fire)
}

// fire commits a deferred batch; a failure retries after another Interval.
func (s *TreeStore) fire() {
	s.mu.Lock()
	s.timer = nil
	s.mu.Unlock()
	if err := s.flush(context.Background(), false, true); err != nil {
		if s.OnError != nil {
			s.OnError(err)
		}
		s.mu.Lock()
		if len(s.desired) > 0 && s.Interval > 0 {
			s.armLocked(s.Interval)
		}
		s.mu.Unlock()
	}
}

func (s *TreeStore) stopTimerLocked() {
	if s.timer != nil {
		s.timer.Stop()
		s.timer = nil
	}
}

// Stop cancels a pending deferred commit; unflushed changes stay recorded
// for the next Flush.
func (s *TreeStore) Stop() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.stopTimerLocked()
}

// Pending reports whether changes wait to be committed (they may still turn
// out to be identical to what is stored).
func (s *TreeStore) Pending() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.latest) > 0 || len(s.desired) > 0
}

func refOf(obj runtime.Object) hub.ObjectRef {
	ref := hub.ObjectRef{Kind: obj.GetObjectKind().GroupVersionKind().Kind}
	if mo, ok := obj.(interface{ GetNamespace() string }); ok {
		ref.Key.Namespace = mo.GetNamespace()
	}
	if mo, ok := obj.(interface{ GetName() string }); ok {
		ref.Key.Name = mo.GetName()
	}
	return ref
}

// sameSlice reports whether a and b are the same bytes in memory (not only
// equal ones): a cheap test for content the store handed over itself.
func sameSlice(a, b []byte) bool {
	return len(a) == len(b) && len(a) > 0 && &a[0] == &b[0]
}

func refLess(a, b hub.ObjectRef) bool {
	if a.Kind != b.Kind {
		return a.Kind < b.Kind
	}
	return a.Key.String() < b.Key.String()
}

// Stored returns what the store believes the file at p holds: what it
// last loaded or committed there. A file in Git with exactly these bytes
// says nothing new from people. The part files of ended runs are not
// known here: only their digest is kept (compactEndedLocked).
func (s *TreeStore) Stored(p string) ([]byte, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	data, ok := s.stored[p]
	return data, ok
}
