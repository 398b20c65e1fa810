package gitsource

import (
	"context"
	"errors"
	"fmt"
	"io"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/filemode"
	"github.com/go-git/go-git/v5/plumbing/format/idxfile"
	"github.com/go-git/go-git/v5/plumbing/object"
	"github.com/go-git/go-git/v5/plumbing/protocol/packp"
	"github.com/go-git/go-git/v5/plumbing/protocol/packp/capability"
	"github.com/go-git/go-git/v5/plumbing/revlist"
	"github.com/go-git/go-git/v5/plumbing/transport"
	"github.com/go-git/go-git/v5/plumbing/transport/client"
)

// errBranchMoved means the remote branch is not where the commit being
// pushed expects it: someone pushed first.
var errBranchMoved = errors.New("rejected: the remote branch moved (fetch first)")

// pushContext bounds a push by the network timeout alone: a caller that
// gives up (serve stopping) stops a push from starting, but never one that
// has started. go-git kills git-receive-pack when the context ends, and one
// killed while it updates a local remote's ref leaves the ref's lock file
// behind, which fails every later push to that branch.
func (s *Source) pushContext(ctx context.Context) (context.Context, context.CancelFunc, error) {
	if err := ctx.Err(); err != nil {
		return nil, nil, err
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), s.cfg.Timeout)
	return ctx, cancel, nil
}

// pushSession is a receive-pack session whose advertised references are
// read (or the error of opening it).
type pushSession struct {
	ctx    context.Context
	cancel context.CancelFunc
	sess   transport.ReceivePackSession
	adv    *packp.AdvRefs
	err    error
}

// openPush opens a receive-pack session and reads what the remote
// advertises. attempt opens it while it builds the commit, so that
// starting git-receive-pack (a local remote) or the round trip to a server
// overlaps the building rather than following it.
func (s *Source) openPush(ctx context.Context) *pushSession {
	ps := &pushSession{}
	if ps.ctx, ps.cancel, ps.err = s.pushContext(ctx); ps.err != nil {
		return ps
	}
	if ps.sess, ps.err = s.receivePackSession(); ps.err != nil {
		return ps
	}
	ps.adv, ps.err = ps.sess.AdvertisedReferencesContext(ps.ctx)
	return ps
}

// close ends the session; one that sent nothing tells the remote there is
// nothing to do.
func (ps *pushSession) close() error {
	var err error
	if ps.sess != nil {
		err = ps.sess.Close()
	}
	if ps.cancel != nil {
		ps.cancel()
	}
	return err
}

// push updates branch on the remote from parent to commit through ps, as a
// compare-and-swap: it is sent only if the remote branch is at parent (or
// does not exist), with parent as the expected old value, which the
// server re-checks under its ref lock. That makes every push a
// fast-forward without depending on the server's
// receive.denyNonFastForwards, and never a force. It closes ps and returns
// the pack it sent, which becomes the cache's copy of the commit.
//
// go-git's own Push computes the objects to send by walking the whole
// history reachable from the remote's refs, which makes each push slower
// than the last on a branch that gains a status commit per reconcile pass.
// Here the remote is known to have parent, so only the objects of the new
// commit that differ from parent's are sent: the cost follows the size of
// the change, not of the history.
func (s *Source) push(ctx context.Context, ps *pushSession, branch string, commit, parent plumbing.Hash) (sent sentPack, err error) {
	defer func() {
		if cerr := ps.close(); err == nil && cerr != nil {
			err = cerr
		}
	}()
	if ps.err != nil {
		return sent, ps.err
	}
	if err := ctx.Err(); err != nil {
		return sent, err // given up before the push started
	}
	ctx, sess, adv := ps.ctx, ps.sess, ps.adv // bounded by the timeout alone
	refs, err := adv.AllReferences()
	if err != nil {
		return sent, err
	}
	name := plumbing.NewBranchReferenceName(branch)
	var old plumbing.Hash
	if ref, err := refs.Reference(name); err == nil {
		old = ref.Hash()
	}
	switch {
	case old == commit:
		return sent, nil
	case !old.IsZero() && old != parent:
		return sent, errBranchMoved
	}

	remoteHas := map[plumbing.Hash]bool{}
	iter, err := refs.IterReferences()
	if err != nil {
		return sent, err
	}
	_ = iter.ForEach(func(r *plumbing.Reference) error {
		if r.Type() == plumbing.HashReference {
			remoteHas[r.Hash()] = true
		}
		return nil
	})
	objects, err := s.objectsToPush(commit, parent, remoteHas)
	if err != nil {
		return sent, err
	}

	req := packp.NewReferenceUpdateRequestFromCapabilities(adv.Capabilities)
	req.Commands = []*packp.Command{{Name: name, Old: old, New: commit}}
	rd, wr := io.Pipe()
	req.Packfile = rd
	encoded := make(chan error, 1)
	var copied packCopy
	var index []idxfile.Entry
	var checksum plumbing.Hash
	go func() {
		var err error
		index, checksum, err = encodePack(io.MultiWriter(wr, &copied), &s.built, objects, !adv.Capabilities.Supports(capability.OFSDelta))
		encoded <- err
		wr.CloseWithError(err)
	}()
	report, err := sess.ReceivePack(ctx, req)
	if err != nil {
		rd.Close() // unblock the encoder
		<-encoded
		return sent, err
	}
	if err := <-encoded; err != nil {
		return sent, err
	}
	if report != nil {
		if err := report.Error(); err != nil {
			return sent, err
		}
	}
	sent.pack, sent.index, sent.checksum = copied.bytes(), index, checksum
	sent.objects = make(map[plumbing.Hash]bool, len(objects))
	for _, o := range objects {
		sent.objects[o.hash] = true
	}
	return sent, nil
}

// sentPack is what a push sent: the pack (nil if none, or too large to
// keep), its index entries and checksum, and the objects in it.
type sentPack struct {
	pack     []byte
	index    []idxfile.Entry
	checksum plumbing.Hash
	objects  map[plumbing.Hash]bool
}

// objectsToPush lists the objects the remote needs to have commit, given
// the hashes its refs point at.
func (s *Source) objectsToPush(commit, parent plumbing.Hash, remoteHas map[plumbing.Hash]bool) ([]pushObject, error) {
	c, err := object.GetCommit(&s.built, commit)
	if err != nil {
		return nil, err
	}
	var baseTree plumbing.Hash
	switch {
	case parent.IsZero():
		// A root commit: everything.
	case remoteHas[parent]:
		// A Git repository holds everything reachable from its refs.
		if baseTree, err = s.treeOf(parent); err != nil {
			return nil, err
		}
	default:
		// The remote may lack parent (it was rewound, or parent is on no
		// ref): fall back to a full reachability walk.
		var have []plumbing.Hash
		for h := range remoteHas {
			if s.store.HasEncodedObject(h) == nil {
				have = append(have, h)
			}
		}
		hashes, err := revlist.Objects(&s.built, []plumbing.Hash{commit}, have)
		if err != nil {
			return nil, err
		}
		out := make([]pushObject, len(hashes))
		for i, h := range hashes {
			out[i].hash = h
		}
		return out, nil
	}
	out := []pushObject{{hash: commit}}
	seen := map[plumbing.Hash]bool{}
	if err := s.newObjects(c.TreeHash, baseTree, seen, &out); err != nil {
		return nil, err
	}
	return out, nil
}

// newObjects appends tree and every object below it that base (the tree
// at the same path in the parent commit, zero if none) does not have at
// the same place, each blob with the tree that holds it.
func (s *Source) newObjects(tree, base plumbing.Hash, seen map[plumbing.Hash]bool, out *[]pushObject) error {
	if tree == base || seen[tree] {
		return nil
	}
	seen[tree] = true
	*out = append(*out, pushObject{hash: tree})
	entries, err := s.treeEntries(tree)
	if err != nil {
		return err
	}
	baseEntries, err := s.treeEntries(base)
	if err != nil {
		return err
	}
	for name, e := range entries {
		b, inBase := baseEntries[name]
		if inBase && b.Hash == e.Hash {
			continue
		}
		switch e.Mode {
		case filemode.Submodule:
			// A commit of another repository: nothing to send.
		case filemode.Dir:
			var sub plumbing.Hash
			if inBase && b.Mode == filemode.Dir {
				sub = b.Hash
			}
			if err := s.newObjects(e.Hash, sub, seen, out); err != nil {
				return err
			}
		default:
			if !seen[e.Hash] {
				seen[e.Hash] = true
				*out = append(*out, pushObject{hash: e.Hash, dir: tree})
			}
		}
	}
	return nil
}

// DeleteBranch deletes ApproveBranchPrefix+name from the remote, once its
// approval request is settled, so no stale branch invites a merge that
// would conflict. Only gitfleet's approval branches can be deleted; a
// branch that is already gone is not an error. The delete is a
// compare-and-swap on the tip the remote advertised, so a branch a person
// pushed to meanwhile is kept.
func (s *Source) DeleteBranch(ctx context.Context, name string) error {
	if !branchName.MatchString(name) {
		return errorf("delete-branch", ErrInvalid, fmt.Sprintf("branch name %q: want letters, digits, '.', '_' or '-'", name))
	}
	if err := s.lock(ctx); err != nil {
		return s.wrap("delete-branch", err)
	}
	defer s.unlock()
	ctx, cancel, err := s.pushContext(ctx)
	if err != nil {
		return s.wrap("delete-branch", err)
	}
	defer cancel()
	sess, err := s.receivePackSession()
	if err != nil {
		return s.wrap("delete-branch", err)
	}
	defer sess.Close()
	adv, err := sess.AdvertisedReferencesContext(ctx)
	if err != nil {
		return s.wrap("delete-branch", err)
	}
	refs, err := adv.AllReferences()
	if err != nil {
		return s.wrap("delete-branch", err)
	}
	ref, err := refs.Reference(plumbing.NewBranchReferenceName(ApproveBranchPrefix + name))
	if err != nil {
		return nil // already gone
	}
	req := packp.NewReferenceUpdateRequestFromCapabilities(adv.Capabilities)
	req.Commands = []*packp.Command{{Name: ref.Name(), Old: ref.Hash(), New: plumbing.ZeroHash}}
	report, err := sess.ReceivePack(ctx, req)
	if err != nil {
		return s.wrap("delete-branch", err)
	}
	if report != nil {
		if err := report.Error(); err != nil {
			return s.wrap("delete-branch", err)
		}
	}
	_ = s.store.RemoveReference(trackingRef(ApproveBranchPrefix + name))
	s.log.Info("deleted", "branch", ApproveBranchPrefix+name)
	return nil
}

// receivePackSession opens a push session to the remote with the
// configured credentials.
func (s *Source) receivePackSession() (transport.ReceivePackSession, error) {
	creds, err := s.cfg.Auth.resolve(s.ep, s.red)
	if err != nil {
		return nil, err
	}
	ep := *s.ep
	ep.CaBundle = creds.caBundle
	tr, err := client.NewClient(&ep)
	if err != nil {
		return nil, err
	}
	return tr.NewReceivePackSession(&ep, creds.method)
}
