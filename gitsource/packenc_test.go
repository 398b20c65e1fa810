package gitsource

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/format/idxfile"
	"github.com/go-git/go-git/v5/plumbing/format/packfile"
	"github.com/go-git/go-git/v5/plumbing/object"
	"github.com/go-git/go-git/v5/storage/memory"
)

// TestEncodePackIsWhatGitReads encodes a pack as a push does (alike blobs
// of one directory as deltas of its first, an unlike one whole, a tree, a
// commit) and checks that git's index-pack takes it and finds every object
// where the encoder's index says, with the same CRC-32, and that go-git
// reads every object back as it was: with offset deltas and, for a remote
// without ofs-delta, with deltas naming their base by hash.
func TestEncodePackIsWhatGitReads(t *testing.T) {
	mem := memory.NewStorage()
	var objects []pushObject
	add := func(o plumbing.EncodedObject, dir plumbing.Hash) {
		h, err := mem.SetEncodedObject(o)
		if err != nil {
			t.Fatal(err)
		}
		objects = append(objects, pushObject{hash: h, dir: dir})
	}
	bindings, runs := plumbing.NewHash(strings.Repeat("b", 40)), plumbing.NewHash(strings.Repeat("c", 40))
	for i := range 20 {
		add(blob(fmt.Appendf(nil, "kind: ClusterResourceBinding\nmetadata:\n  name: app-member-%04d\nspec:\n  state: Bound\n  targetCluster: member-%04d\n  resourceSnapshotName: app-0-snapshot\n", i, i)), bindings)
	}
	add(blob(bytes.Repeat([]byte("unlike anything else "), 40)), bindings)
	add(blob([]byte("kind: UpdateRun\n")), runs)
	add(blob(bytes.Repeat([]byte{'x'}, 300)), plumbing.ZeroHash) // no directory: whole
	tree := &object.Tree{Entries: []object.TreeEntry{{Name: "a.yaml", Mode: 0o100644, Hash: objects[0].hash}}}
	to := mem.NewEncodedObject()
	if err := tree.Encode(to); err != nil {
		t.Fatal(err)
	}
	add(to, plumbing.ZeroHash)
	sig := object.Signature{Name: "gitfleet", Email: "gitfleet@example.com"}
	commit := &object.Commit{Author: sig, Committer: sig, Message: "status", TreeHash: to.Hash()}
	co := mem.NewEncodedObject()
	if err := commit.Encode(co); err != nil {
		t.Fatal(err)
	}
	add(co, plumbing.ZeroHash)

	for _, refDeltas := range []bool{false, true} {
		t.Run(fmt.Sprintf("refDeltas=%v", refDeltas), func(t *testing.T) {
			var pack bytes.Buffer
			index, checksum, err := encodePack(&pack, mem, objects, refDeltas)
			if err != nil {
				t.Fatal(err)
			}
			if len(index) != len(objects) {
				t.Fatalf("index lists %d objects, want %d", len(index), len(objects))
			}
			if !bytes.HasSuffix(pack.Bytes(), checksum[:]) {
				t.Fatal("the pack does not end with its checksum")
			}

			// git's index-pack hashes every object and writes its own index.
			dir := t.TempDir()
			path := filepath.Join(dir, "pack-"+checksum.String()+".pack")
			if err := os.WriteFile(path, pack.Bytes(), 0o644); err != nil {
				t.Fatal(err)
			}
			if out := runGit(t, dir, "index-pack", "--strict", path); strings.TrimSpace(out) != checksum.String() {
				t.Fatalf("git index-pack: %q, want the pack's checksum %s", out, checksum)
			}
			idx := idxfile.NewMemoryIndex()
			f, err := os.Open(strings.TrimSuffix(path, ".pack") + ".idx")
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			if err := idxfile.NewDecoder(f).Decode(idx); err != nil {
				t.Fatal(err)
			}
			gitEntries, err := indexEntries(idx)
			if err != nil {
				t.Fatal(err)
			}
			byHash := func(a, b idxfile.Entry) int { return bytes.Compare(a.Hash[:], b.Hash[:]) }
			slices.SortFunc(gitEntries, byHash)
			ours := slices.Clone(index)
			slices.SortFunc(ours, byHash)
			if !slices.Equal(ours, gitEntries) {
				t.Fatalf("the encoder's index differs from git's:\n ours %v\n git's %v", ours, gitEntries)
			}
			if refDeltas {
				return
			}
			verify := runGit(t, dir, "verify-pack", "-v", path)
			if deltas := strings.Count(verify, " 1 "+objects[0].hash.String()); deltas != 19 {
				t.Errorf("%d blobs are deltas of the directory's first, want 19:\n%s", deltas, verify)
			}

			// go-git reads each object back from the pack.
			read := memory.NewStorage()
			if err := packfile.UpdateObjectStorage(read, bytes.NewReader(pack.Bytes())); err != nil {
				t.Fatal(err)
			}
			for _, po := range objects {
				want, _ := mem.EncodedObject(plumbing.AnyObject, po.hash)
				got, err := read.EncodedObject(plumbing.AnyObject, po.hash)
				if err != nil {
					t.Fatalf("object %s: %v", po.hash, err)
				}
				wb, _ := objectBytes(want)
				gb, _ := objectBytes(got)
				if got.Type() != want.Type() || !bytes.Equal(gb, wb) {
					t.Fatalf("object %s read back differs", po.hash)
				}
			}
		})
	}
}

// TestAppendOFSOffset holds the encoder to Git's encoding of the distance
// back to an ofs-delta's base.
func TestAppendOFSOffset(t *testing.T) {
	for _, tc := range []struct {
		d    uint64
		want []byte
	}{
		{0, []byte{0x00}},
		{127, []byte{0x7f}},
		{128, []byte{0x80, 0x00}},
		{16511, []byte{0xff, 0x7f}},
		{16512, []byte{0x80, 0x80, 0x00}},
	} {
		if got := appendOFSOffset(nil, tc.d); !bytes.Equal(got, tc.want) {
			t.Errorf("appendOFSOffset(%d) = %x, want %x", tc.d, got, tc.want)
		}
	}
}
