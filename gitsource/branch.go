package gitsource

import (
	"context"

	"github.com/go-git/go-git/v5/plumbing"
)

// FetchBranch fetches one more branch of the remote into the cache — a
// pull request's head, for its rollout preview — and returns its tip. A
// branch the remote does not have is an error wrapping ErrNotFound.
func (s *Source) FetchBranch(ctx context.Context, branch string) (plumbing.Hash, error) {
	if err := s.lock(ctx); err != nil {
		return plumbing.ZeroHash, s.wrap("fetch", err)
	}
	defer s.unlock()
	if err := s.fetchRefs(ctx, branch); err != nil {
		return plumbing.ZeroHash, err
	}
	h, ok := s.tip(branch)
	if !ok {
		return plumbing.ZeroHash, errorf("fetch", ErrNotFound, "branch "+branch)
	}
	return h, nil
}

// GitDir is the cache: a bare repository that the git CLI reads too
// (`gitfleet plan` merges and previews a pull request from it).
func (s *Source) GitDir() string { return s.cfg.CacheDir }
