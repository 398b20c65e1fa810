package gitsource

import (
	"context"
	"sync"

	"github.com/go-git/go-git/v5/plumbing"
)

// maxOwnPushes bounds the record of Source's own pushes; past it the
// record starts over, which only costs a caller one full look at history.
const maxOwnPushes = 4096

// ownPushes records the commits Apply pushed to the tracked branch, each
// with its parent: commits whose content the caller knows, since it wrote
// it. The caller holds the lock.
type ownPushes map[plumbing.Hash]plumbing.Hash

func (o *ownPushes) add(commit, parent plumbing.Hash) {
	if *o == nil || len(*o) >= maxOwnPushes {
		*o = ownPushes{}
	}
	(*o)[commit] = parent
}

// PushedItself reports whether the tracked branch went from from to to
// only through commits this Source's Apply pushed, so that a caller that
// has processed from has nothing new to read in to: every change since is
// its own. It is false when from is zero, when from is not on that chain,
// and for PushBranch commits (a person's merge of one is their approval,
// which must be read). It reads no history: a chain with any commit of
// anyone else's, or older than the record, reports false.
func (s *Source) PushedItself(ctx context.Context, from, to plumbing.Hash) (bool, error) {
	if err := s.lock(ctx); err != nil {
		return false, s.wrap("history", err)
	}
	defer s.unlock()
	if from.IsZero() {
		return false, nil
	}
	for h := to; h != from; {
		parent, ok := s.own[h]
		if !ok {
			return false, nil
		}
		h = parent
	}
	return true, nil
}

// ownTip is the tracked branch's tip as this Source last pushed it, while no
// fetch has seen another: what a forge's push webhook for that push
// announces. It has its own lock so that a webhook handler never waits for
// a push or fetch holding the Source's.
type ownTip struct {
	mu   sync.Mutex
	hash plumbing.Hash
}

func (o *ownTip) set(h plumbing.Hash) {
	o.mu.Lock()
	o.hash = h
	o.mu.Unlock()
}

// seen forgets the record when the branch's cached tip is another commit.
func (o *ownTip) seen(tip plumbing.Hash) {
	o.mu.Lock()
	if o.hash != tip {
		o.hash = plumbing.ZeroHash
	}
	o.mu.Unlock()
}

// IsOwnTip reports whether commit (hex) is the tracked branch's tip as this
// Source pushed it, with no other tip fetched since: the cache already
// holds it, so a webhook announcing it has nothing to fetch. It is false
// for anything else, a malformed or zero hash included.
func (s *Source) IsOwnTip(commit string) bool {
	if !plumbing.IsHash(commit) {
		return false
	}
	h := plumbing.NewHash(commit)
	if h.IsZero() {
		return false
	}
	s.ownTip.mu.Lock()
	defer s.ownTip.mu.Unlock()
	return s.ownTip.hash == h
}
