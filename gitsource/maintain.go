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
	Packs        int   // pack files
	PackBytes    int64 // their size
}

// MaintainReport says what Maintain did.
type MaintainReport struct {
	Before, After CacheStats
	// Repacked is true for a full repack, false when the packs were only
	// merged into one.
	Repacked bool
}

// Maintain keeps the cache small and quick to read. Every pushed commit
// and every fetch adds a pack (pushed ones are merged as they come,
// packs.go); Maintain merges them all into one, byte for byte, which costs
// a copy of the cache. Once the packs have grown to twice what the last
// full repack left (and on a Source's first Maintain, or with loose
// objects, which large pushes and fetches write), it repacks as git gc
// would instead: every object reachable from a branch goes into one pack
// with deltas, and everything else is dropped (objects of deleted approval
// branches, status files pushed again with an earlier content). A full
// repack reads every object of the history, so doing it only when the
// cache doubled keeps its cost in proportion to what was pushed since,
// not to the age of the repository. It holds the source's lock, so
// nothing reads or writes the cache meanwhile.
func (s *Source) Maintain(ctx context.Context) (MaintainReport, error) {
	var r MaintainReport
	if err := s.lock(ctx); err != nil {
		return r, s.wrap("maintain", err)
	}
	defer s.unlock()
	var err error
	if r.Before, err = s.statsLocked(); err != nil {
		return r, err
	}
	r.Repacked = s.repacked == 0 || r.Before.LooseObjects > 0 || r.Before.PackBytes > 2*s.repacked
	if !r.Repacked {
		if err := s.built.mergeAll(); err != nil {
			s.log.Warn("cannot merge the cache's packs; repacking it", "err", s.red.scrub(err.Error()))
			r.Repacked = true
		}
	}
	if r.Repacked {
		if err := s.repackLocked(); err != nil {
			return r, err
		}
	}
	if r.After, err = s.statsLocked(); err != nil {
		return r, err
	}
	if r.Repacked {
		s.repacked = max(r.After.PackBytes, 1)
	}
	return r, nil
}

// repackLocked repacks the cache as git gc would and reopens the storage,
// so no index points at a deleted pack.
func (s *Source) repackLocked() error {
	// go-git's repack reads objects through its own indexes too (the
	// delta search), which must list the packs the store indexed itself.
	s.store.Reindex()
	if err := s.repo.RepackObjects(&git.RepackConfig{}); err != nil {
		return s.wrap("maintain", fmt.Errorf("repack: %w", err))
	}
	if err := s.store.ForEachObjectHash(func(h plumbing.Hash) error {
		return s.store.DeleteLooseObject(h)
	}); err != nil {
		return s.wrap("maintain", fmt.Errorf("deleting loose objects: %w", err))
	}
	if err := s.built.removeOrphanRevs(); err != nil {
		return s.wrap("maintain", fmt.Errorf("deleting reverse indexes: %w", err))
	}
	if reason := s.useCache(); reason != "" {
		// Never expected: the repack left something unreadable. The
		// remote has everything; the next fetch clones again.
		if err := s.recloneLocked("after maintenance: " + reason); err != nil {
			return err
		}
	}
	return nil
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
			st.PackBytes += info.Size()
		}
		return nil
	})
	if err != nil {
		return st, s.wrap("stats", err)
	}
	return st, nil
}
