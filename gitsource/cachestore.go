package gitsource

import (
	"bytes"
	"cmp"
	"io"
	"slices"

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
// from the entries its index file is written from (packIndex), and looked
// up before go-git's; go-git reads the indexes again only when Maintain
// merges or repacks the cache (Reindex). The packs indexed here are as few
// as the merges of pushed packs leave, at most packFanIn-1 of each size.
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
	index idxfile.Index // a *packIndex, or a *diskIndex once merged
}

// close closes the pack's index files, if it reads them.
func (p *ownPack) close() {
	if d, ok := p.index.(*diskIndex); ok {
		d.close()
	}
}

var _ storer.EncodedObjectStorer = (*cacheStore)(nil)

// objectCacheSize bounds go-git's cache of decoded objects. Its default,
// 96 MiB, filled up with status blobs read back while packing pushes and
// made the daemon's memory climb run after run; what the cache saves is
// re-reading delta bases of the blobs of one push and the trees a diff
// reads twice. The trees of the branch's tip, the next commit's bases,
// are kept apart (layer.recent). At 8 MiB it filled with the trees of
// old status commits over 60 runs of 1,000 clusters, as much heap as
// everything else added in 100 runs (BenchmarkHeapAcrossRuns).
const objectCacheSize = 2 * cache.MiByte

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

// addPack indexes pack h, just put in place.
func (c *cacheStore) addPack(h plumbing.Hash, level int, index idxfile.Index) {
	c.own = append(c.own, ownPack{hash: h, level: level, index: index})
}

// release closes the index files of the packs indexed here: the store is
// being replaced.
func (c *cacheStore) release() {
	for i := range c.own {
		c.own[i].close()
	}
	c.own = nil
}

// Reindex forgets the packs indexed here and has go-git read every pack
// index again at its next look-up: packs were merged or deleted.
func (c *cacheStore) Reindex() {
	c.release()
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

// packIndex is the index of an own pack: its entries by hash, and their
// order by offset, which reading a delta needs (the hash of its base).
// go-git's MemoryIndex answers that with a map of every offset built at
// the first delta read and kept with the index, which for the packs
// indexed here until Maintain was more than their entries (4.4 MiB after
// 30 runs at 1,000 clusters); this costs 4 bytes an entry.
type packIndex struct {
	byHash   []idxfile.Entry // sorted by hash; an object in two packs merged is there twice
	byOffset []uint32        // positions in byHash, by offset
}

var _ idxfile.Index = (*packIndex)(nil)

// newPackIndex indexes entries, sorted by hash (encodeIndex sorts them).
func newPackIndex(entries []idxfile.Entry) *packIndex {
	idx := &packIndex{byHash: slices.Clip(entries), byOffset: make([]uint32, len(entries))}
	for i := range idx.byOffset {
		idx.byOffset[i] = uint32(i)
	}
	slices.SortFunc(idx.byOffset, func(a, b uint32) int { return cmp.Compare(entries[a].Offset, entries[b].Offset) })
	return idx
}

func (idx *packIndex) find(h plumbing.Hash) (*idxfile.Entry, bool) {
	i, ok := slices.BinarySearchFunc(idx.byHash, h, func(e idxfile.Entry, h plumbing.Hash) int { return bytes.Compare(e.Hash[:], h[:]) })
	if !ok {
		return nil, false
	}
	return &idx.byHash[i], true
}

func (idx *packIndex) Contains(h plumbing.Hash) (bool, error) {
	_, ok := idx.find(h)
	return ok, nil
}

func (idx *packIndex) FindOffset(h plumbing.Hash) (int64, error) {
	if e, ok := idx.find(h); ok {
		return int64(e.Offset), nil
	}
	return 0, plumbing.ErrObjectNotFound
}

func (idx *packIndex) FindCRC32(h plumbing.Hash) (uint32, error) {
	if e, ok := idx.find(h); ok {
		return e.CRC32, nil
	}
	return 0, plumbing.ErrObjectNotFound
}

func (idx *packIndex) FindHash(o int64) (plumbing.Hash, error) {
	i, ok := slices.BinarySearchFunc(idx.byOffset, o, func(p uint32, o int64) int { return cmp.Compare(int64(idx.byHash[p].Offset), o) })
	if !ok {
		return plumbing.ZeroHash, plumbing.ErrObjectNotFound
	}
	return idx.byHash[idx.byOffset[i]].Hash, nil
}

func (idx *packIndex) Count() (int64, error) { return int64(len(idx.byHash)), nil }

func (idx *packIndex) Entries() (idxfile.EntryIter, error) {
	return &entryIter{next: func(i int) *idxfile.Entry { return &idx.byHash[i] }, n: len(idx.byHash)}, nil
}

func (idx *packIndex) EntriesByOffset() (idxfile.EntryIter, error) {
	return &entryIter{next: func(i int) *idxfile.Entry { return &idx.byHash[idx.byOffset[i]] }, n: len(idx.byHash)}, nil
}

// entryIter lists n entries, the ith from next(i).
type entryIter struct {
	next func(int) *idxfile.Entry
	i, n int
}

func (it *entryIter) Next() (*idxfile.Entry, error) {
	if it.i >= it.n {
		return nil, io.EOF
	}
	e := *it.next(it.i)
	it.i++
	return &e, nil
}

func (it *entryIter) Close() error {
	it.i = it.n
	return nil
}
