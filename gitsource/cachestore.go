package gitsource

import (
	"bytes"

	"github.com/go-git/go-billy/v5/osfs"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/cache"
	"github.com/go-git/go-git/v5/plumbing/format/idxfile"
	"github.com/go-git/go-git/v5/plumbing/format/packfile"
	"github.com/go-git/go-git/v5/plumbing/storer"
	"github.com/go-git/go-git/v5/storage/filesystem"
	"github.com/go-git/go-git/v5/utils/ioutil"
)

// cacheStore is the cache's go-git storage, which also indexes the packs
// this Source wrote for pushed commits (packs.go) since go-git last read
// the cache's pack indexes.
//
// go-git reads every pack index of a repository at its first packed read
// and again only after Reindex; it cannot add one pack. Reindexing after
// each pushed pack made it read the whole history's indexes again at every
// status commit: at 1,000 clusters 2.8 MB allocated a run at run 10, 32 MB
// a run past run 30, and the CPU to match, growing with the history
// (BenchmarkHeapAcrossRuns). A pack written here is indexed here instead,
// from the index file written with it, and looked up before go-git's;
// go-git reads the indexes again only when Maintain merges or repacks the
// cache (Reindex). The packs indexed here are as few as the merges of
// pushed packs leave, at most packFanIn-1 of each size.
//
// go-git's index never lists a pack of own: it is read (indexLoaded)
// before the first of them is put in place, and Reindex empties own. So a
// pack that a merge deletes is never looked up by go-git.
//
// Only the holder of Source's lock uses it.
type cacheStore struct {
	*filesystem.Storage
	objectCache cache.Object
	own         []ownPack // oldest first
	// indexLoaded is true once go-git has read the pack indexes after the
	// last Reindex.
	indexLoaded bool
}

// ownPack is a pack this Source wrote for pushed commits, indexed by
// cacheStore; a pack of size level L holds packFanIn^L commits.
type ownPack struct {
	hash  plumbing.Hash
	level int
	index *idxfile.MemoryIndex
}

var _ storer.EncodedObjectStorer = (*cacheStore)(nil)

// objectCacheSize bounds go-git's cache of decoded objects. Its default,
// 96 MiB, filled up with status blobs read back while packing pushes and
// made the daemon's memory climb run after run; what the cache saves is
// re-reading delta bases of the trees and blobs of the last few commits.
const objectCacheSize = 8 * cache.MiByte

func newStorage(dir string) *cacheStore {
	objects := cache.NewObjectLRU(objectCacheSize)
	return &cacheStore{Storage: filesystem.NewStorage(osfs.New(dir), objects), objectCache: objects}
}

// loadIndexes has go-git read the cache's pack indexes now, if it has not
// since the last Reindex; place calls it before it puts a pack in place.
func (c *cacheStore) loadIndexes() error {
	if c.indexLoaded {
		return nil
	}
	// go-git reads them at the first look-up it cannot answer from a
	// loose object; no object has the zero hash.
	if err := c.Storage.HasEncodedObject(plumbing.ZeroHash); err != nil && err != plumbing.ErrObjectNotFound {
		return err
	}
	c.indexLoaded = true
	return nil
}

// addPack indexes pack h, just put in place, whose index file go-git
// would read as index.
func (c *cacheStore) addPack(h plumbing.Hash, level int, index *idxfile.MemoryIndex) {
	c.own = append(c.own, ownPack{hash: h, level: level, index: index})
}

// Reindex forgets the packs indexed here and has go-git read every pack
// index again at its next look-up: packs were merged or deleted.
func (c *cacheStore) Reindex() {
	c.own = nil
	c.indexLoaded = false
	c.Storage.Reindex()
}

// find returns the newest own pack that holds h, and h's offset in it.
func (c *cacheStore) find(h plumbing.Hash) (*ownPack, int64) {
	for i := len(c.own) - 1; i >= 0; i-- {
		if offset, err := c.own[i].index.FindOffset(h); err == nil {
			return &c.own[i], offset
		}
	}
	return nil, -1
}

// open opens an own pack for reading, as go-git opens its packs: for one
// read, sharing the storage's cache of objects.
func (c *cacheStore) open(p *ownPack) (*packfile.Packfile, error) {
	fs := c.Storage.Filesystem()
	f, err := fs.Open(fs.Join("objects", "pack", "pack-"+p.hash.String()+".pack"))
	if err != nil {
		return nil, err
	}
	return packfile.NewPackfileWithCache(p.index, fs, f, c.objectCache, 0), nil
}

func (c *cacheStore) EncodedObject(t plumbing.ObjectType, h plumbing.Hash) (obj plumbing.EncodedObject, err error) {
	p, offset := c.find(h)
	if p == nil {
		return c.Storage.EncodedObject(t, h)
	}
	pack, err := c.open(p)
	if err != nil {
		return nil, err
	}
	defer ioutil.CheckClose(pack, &err)
	obj, err = pack.GetByOffset(offset)
	if err != nil {
		return nil, err
	}
	if t != plumbing.AnyObject && obj.Type() != t {
		return nil, plumbing.ErrObjectNotFound
	}
	return obj, nil
}

func (c *cacheStore) HasEncodedObject(h plumbing.Hash) error {
	if p, _ := c.find(h); p != nil {
		return nil
	}
	return c.Storage.HasEncodedObject(h)
}

func (c *cacheStore) EncodedObjectSize(h plumbing.Hash) (size int64, err error) {
	p, offset := c.find(h)
	if p == nil {
		return c.Storage.EncodedObjectSize(h)
	}
	if o, ok := c.objectCache.Get(h); ok {
		return o.Size(), nil
	}
	pack, err := c.open(p)
	if err != nil {
		return 0, err
	}
	defer ioutil.CheckClose(pack, &err)
	return pack.GetSizeByOffset(offset)
}

// IterEncodedObjects hands the packs indexed here over to go-git first,
// whose iterator reads every pack of the directory with its own indexes.
func (c *cacheStore) IterEncodedObjects(t plumbing.ObjectType) (storer.EncodedObjectIter, error) {
	c.Reindex()
	return c.Storage.IterEncodedObjects(t)
}

// decodeIndex is the index go-git reads from an index file's bytes.
func decodeIndex(data []byte) (*idxfile.MemoryIndex, error) {
	idx := idxfile.NewMemoryIndex()
	if err := idxfile.NewDecoder(bytes.NewReader(data)).Decode(idx); err != nil {
		return nil, err
	}
	return idx, nil
}
