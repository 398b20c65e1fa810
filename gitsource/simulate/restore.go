package simulate

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"sort"
	"strings"
	"time"

	"github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/object"
	"k8s.io/apimachinery/pkg/runtime"

	fleet "github.com/gitfleet/gitfleet/api/v1beta1"
	"github.com/gitfleet/gitfleet/gitsource"
	"github.com/gitfleet/gitfleet/gitsource/ingest"
	"github.com/gitfleet/gitfleet/internal/clock"
	"github.com/gitfleet/gitfleet/reconciler/hub"
	"github.com/gitfleet/gitfleet/reconciler/hub/embedded"
	"github.com/gitfleet/gitfleet/status"
)

// Where a simulation starts: from an empty hub, replaying the whole branch
// (FromScratch), or from the state gitfleet recorded in status/ at some
// revision, replaying only the commits gitfleet had not processed yet.
const (
	// FromScratch replays the branch into an empty hub.
	FromScratch = "none"
	// FromTip restores status/ of the branch's tip when it has one, and
	// replays from scratch otherwise (the default).
	FromTip = ""
)

// recorded is the state read from the status tree of one revision: what
// `gitfleet serve` would restore on a restart at that point.
type recorded struct {
	objects []runtime.Object
	// commit is the revision status/ was read from.
	commit plumbing.Hash
	// at is that commit's committer time: the simulation starts there.
	at time.Time
}

// openRecorded reads the state a simulation starts from, as
// Options.FromStatus says: nil to start from scratch.
func openRecorded(ctx context.Context, opts Options, tip plumbing.Hash) (*recorded, error) {
	rev := opts.FromStatus
	switch rev {
	case FromScratch:
		return nil, nil
	case FromTip:
		rev = tip.String()
	}
	rec, ok, err := readRecorded(ctx, opts.Repo, rev, tip)
	switch {
	case err != nil:
		return nil, err
	case !ok && opts.FromStatus != FromTip:
		return nil, fmt.Errorf("--from-status %s: the revision has no %s/ tree; use --from-status %s to replay from scratch", opts.FromStatus, status.StatusDir, FromScratch)
	}
	return rec, nil
}

// readRecorded reads status/ at revision rev of the repository and
// approvals/ at the branch tip (where people merge approvals, as the
// daemon reads them). ok is false when rev has no status/ tree.
func readRecorded(ctx context.Context, repoPath, rev string, tip plumbing.Hash) (_ *recorded, ok bool, _ error) {
	repo, err := git.PlainOpen(repoPath) // a bare repository, or a work tree's root
	if errors.Is(err, git.ErrRepositoryNotExists) {
		repo, err = git.PlainOpenWithOptions(repoPath, &git.PlainOpenOptions{DetectDotGit: true})
	}
	if err != nil {
		return nil, false, fmt.Errorf("opening repository %s: %w", repoPath, err)
	}
	h, err := repo.ResolveRevision(plumbing.Revision(rev))
	if err != nil {
		return nil, false, fmt.Errorf("resolving --from-status %q: %w", rev, err)
	}
	c, err := repo.CommitObject(*h)
	if err != nil {
		return nil, false, fmt.Errorf("reading commit %s: %w", h, err)
	}
	files := filesMap{}
	found, err := readCommitDir(c, status.StatusDir, files)
	if err != nil || !found {
		return nil, false, err
	}
	tc, err := repo.CommitObject(tip)
	if err != nil {
		return nil, false, fmt.Errorf("reading commit %s: %w", tip, err)
	}
	if _, err := readCommitDir(tc, status.ApprovalsDir, files); err != nil {
		return nil, false, err
	}
	objs, err := status.NewTreeStore(files, nil, clock.Real{}).Load(ctx)
	if err != nil {
		return nil, false, fmt.Errorf("reading the status tree of %s: %w", rev, err)
	}
	// The daemon's own records (commits that did not render, the source
	// status) are not hub objects.
	hubObjs := objs[:0]
	for _, o := range objs {
		switch o.(type) {
		case *fleet.Commit, *fleet.GitSource:
			continue
		}
		hubObjs = append(hubObjs, o)
	}
	return &recorded{objects: hubObjs, commit: *h, at: c.Committer.When.UTC()}, true, nil
}

// readCommitDir adds every file below dir of commit c to files; found is false
// when c has no such folder.
func readCommitDir(c *object.Commit, dir string, files filesMap) (found bool, _ error) {
	tree, err := c.Tree()
	if err != nil {
		return false, err
	}
	sub, err := tree.Tree(dir)
	if errors.Is(err, object.ErrDirectoryNotFound) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	err = sub.Files().ForEach(func(f *object.File) error {
		r, err := f.Reader()
		if err != nil {
			return err
		}
		defer r.Close()
		data, err := io.ReadAll(r)
		files[dir+"/"+f.Name] = data
		return err
	})
	return true, err
}

// filesMap serves status.Files from memory.
type filesMap map[string][]byte

func (m filesMap) Read(p string) ([]byte, error) {
	data, ok := m[p]
	if !ok {
		return nil, fs.ErrNotExist
	}
	return data, nil
}

func (m filesMap) List(prefix string) ([]string, error) {
	var out []string
	for p := range m {
		if strings.HasPrefix(p, prefix) {
			out = append(out, p)
		}
	}
	sort.Strings(out)
	return out, nil
}

// restoredStore hands the recorded objects to Hub.Restore and writes
// everything after that through to the simulation's own Store.
type restoredStore struct {
	embedded.Store
	objects []runtime.Object
}

func (s restoredStore) Load(context.Context) ([]runtime.Object, error) { return s.objects, nil }

// unprocessed drops the commits of history (oldest first) that gitfleet
// had already processed when it recorded the restored state: those up to
// the newest one a restored resource snapshot came from, as the daemon's
// resume point. Commits that touch only status/ and approvals/ are dropped
// too: they change no hub content.
func unprocessed(ctx context.Context, h *embedded.Hub, src *gitsource.Source, history []plumbing.Hash) ([]plumbing.Hash, error) {
	recorded, err := ingest.RecordedCommits(ctx, h)
	if err != nil {
		return nil, err
	}
	rest := history[ingest.ResumePoint(history, recorded)+1:]
	var out []plumbing.Hash
	for _, c := range rest {
		commit, err := src.Commit(ctx, c)
		if err != nil {
			return nil, err
		}
		parent := plumbing.ZeroHash
		if commit.NumParents() > 0 {
			parent = commit.ParentHashes[0]
		}
		paths, err := src.ChangedPaths(ctx, parent, c)
		if err == nil && gitsource.OnlyUnder(paths, status.StatusDir+"/", status.ApprovalsDir+"/") {
			continue
		}
		out = append(out, c)
	}
	return out, nil
}

// snapshotNames lists the names of every resource snapshot of the hub.
func snapshotNames(ctx context.Context, h *embedded.Hub) (map[string]bool, error) {
	snaps, err := allSnapshots(ctx, h)
	if err != nil {
		return nil, err
	}
	names := make(map[string]bool, len(snaps))
	for _, s := range snaps {
		names[s.Namespace+"/"+s.Name] = true
	}
	return names, nil
}

// newSnapshots lists the resource snapshots not named in before.
func newSnapshots(ctx context.Context, h *embedded.Hub, before map[string]bool) ([]*fleet.ResourceSnapshot, error) {
	snaps, err := allSnapshots(ctx, h)
	if err != nil {
		return nil, err
	}
	var out []*fleet.ResourceSnapshot
	for _, s := range snaps {
		if !before[s.Namespace+"/"+s.Name] {
			out = append(out, s)
		}
	}
	return out, nil
}

func allSnapshots(ctx context.Context, h *embedded.Hub) ([]*fleet.ResourceSnapshot, error) {
	placements, err := h.ListPlacements(ctx)
	if err != nil {
		return nil, err
	}
	var out []*fleet.ResourceSnapshot
	for _, p := range placements {
		snaps, err := h.ListResourceSnapshots(ctx, hub.Key{Namespace: p.Namespace, Name: p.Name})
		if err != nil {
			return nil, err
		}
		out = append(out, snaps...)
	}
	return out, nil
}
