package gitsource

import (
	"context"
	"fmt"
	"io/fs"
	"path/filepath"
	"syscall"

	git "github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/plumbing"
)

// CacheStats describes the cache on disk.
type CacheStats struct {
	Bytes        int64 // size of all files below the cache directory
	DiskBytes    int64 // what they take on disk (whole blocks)
	LooseObjects int   // objects stored one file each
	Packs        int   // pack files (each pushed commit adds one)
}

// Maintain packs the cache, as `git gc` would: every object reachable from
// a branch goes into one pack, older packs are deleted (each pushed commit
// adds one, the pack it sent), and so is every loose object (fetches and
// large pushes write some) — reachable ones are in the new pack, the
// others are garbage. Without it a long-running daemon's cache grows by a
// pack per status commit, forever. It holds the source's lock, so nothing reads or writes the cache
// meanwhile, and it reopens the storage afterwards so no index points at a
// deleted pack. It returns the cache before and after.
func (s *Source) Maintain(ctx context.Context) (before, after CacheStats, err error) {
	if err := s.lock(ctx); err != nil {
		return before, after, s.wrap("maintain", err)
	}
	defer s.unlock()
	if before, err = s.statsLocked(); err != nil {
		return before, after, err
	}
	if err := s.repo.RepackObjects(&git.RepackConfig{}); err != nil {
		return before, after, s.wrap("maintain", fmt.Errorf("repack: %w", err))
	}
	if err := s.store.ForEachObjectHash(func(h plumbing.Hash) error {
		return s.store.DeleteLooseObject(h)
	}); err != nil {
		return before, after, s.wrap("maintain", fmt.Errorf("deleting loose objects: %w", err))
	}
	if reason := s.useCache(); reason != "" {
		// Never expected: the repack left something unreadable. The
		// remote has everything; the next fetch clones again.
		if err := s.recloneLocked("after maintenance: " + reason); err != nil {
			return before, after, err
		}
	}
	after, err = s.statsLocked()
	return before, after, err
}

// Stats measures the cache on disk.
func (s *Source) Stats(ctx context.Context) (CacheStats, error) {
	if err := s.lock(ctx); err != nil {
		return CacheStats{}, s.wrap("stats", err)
	}
	defer s.unlock()
	return s.statsLocked()
}

func (s *Source) statsLocked() (CacheStats, error) {
	var st CacheStats
	err := filepath.WalkDir(s.cfg.CacheDir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			return nil
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		st.Bytes += info.Size()
		if sys, ok := info.Sys().(*syscall.Stat_t); ok {
			st.DiskBytes += sys.Blocks * 512
		}
		rel, _ := filepath.Rel(s.cfg.CacheDir, p)
		switch {
		case len(rel) == len("objects/xx/")+38 && rel[:8] == "objects/" && rel[10] == '/':
			st.LooseObjects++
		case filepath.Dir(rel) == filepath.Join("objects", "pack") && filepath.Ext(rel) == ".pack":
			st.Packs++
		}
		return nil
	})
	if err != nil {
		return st, s.wrap("stats", err)
	}
	return st, nil
}
