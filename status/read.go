package status

import (
	"fmt"
	"sort"
	"strings"

	"k8s.io/apimachinery/pkg/runtime"

	fleet "github.com/gitfleet/gitfleet/api/v1beta1"
)

// StoredObject is one object read from the tree.
type StoredObject struct {
	// Path is the object's own file (PathFor).
	Path   string
	Object runtime.Object
	// Files is every file the object was read from, by path: its own file
	// and, for a split object, its parts.
	Files map[string][]byte
}

// FileError is a problem with one file of the tree.
type FileError struct {
	File string
	Err  error
}

func (e *FileError) Error() string { return e.File + ": " + e.Err.Error() }
func (e *FileError) Unwrap() error { return e.Err }

// ReadObjects decodes every object stored below dir (a root such as
// "status", or a family folder such as "status/runs"), whole: a split run
// or placement is assembled from its file and its parts, so readers never
// see the layout. Objects come sorted by path. A file that does not decode,
// or that sits where its object does not belong, is a FileError naming it;
// the other objects are still returned (a split object whose part is broken
// is not, since it would be incomplete).
func ReadObjects(files Files, dir string) ([]StoredObject, []error) {
	listed, err := files.List(dir)
	if err != nil {
		return nil, []error{&FileError{File: dir, Err: fmt.Errorf("cannot list: %w", err)}}
	}
	var mains []string
	parts := map[string]map[string][]byte{} // by main path
	var errs []error
	fail := func(p string, err error) { errs = append(errs, &FileError{File: p, Err: err}) }
	for _, p := range listed {
		if !strings.HasSuffix(p, ".yaml") {
			continue
		}
		main, _, ok := partOf(p)
		if !ok {
			mains = append(mains, p)
			continue
		}
		if _, err := RefFor(p); err != nil {
			fail(p, fmt.Errorf("not a part file gitfleet writes"))
			continue
		}
		data, err := files.Read(p)
		if err != nil {
			fail(p, err)
			continue
		}
		if parts[main] == nil {
			parts[main] = map[string][]byte{}
		}
		parts[main][p] = data
	}
	sort.Strings(mains)
	out := make([]StoredObject, 0, len(mains))
	for _, p := range mains {
		data, err := files.Read(p)
		if err != nil {
			fail(p, err)
			delete(parts, p)
			continue
		}
		obj, err := DecodeFile(p, data)
		if err != nil {
			errs = append(errs, &FileError{File: p, Err: fmt.Errorf("%s", strings.TrimPrefix(err.Error(), p+": "))})
			delete(parts, p)
			continue
		}
		if want, err := PathFor(obj); err != nil {
			fail(p, err)
			delete(parts, p)
			continue
		} else if _, binding := obj.(*fleet.Binding); want != p && !(binding && want == unstaged(p)) {
			fail(p, fmt.Errorf("holds %s, which belongs in %s", describeObject(obj), want))
			delete(parts, p)
			continue
		}
		own := parts[p]
		delete(parts, p)
		if err := assemble(obj, p, own); err != nil {
			file, msg, _ := strings.Cut(err.Error(), ": ")
			errs = append(errs, &FileError{File: file, Err: fmt.Errorf("%s", msg)})
			continue
		}
		all := map[string][]byte{p: data}
		for q, d := range own {
			all[q] = d
		}
		out = append(out, StoredObject{Path: p, Object: obj, Files: all})
	}
	var orphans []string
	for main, ps := range parts {
		for q := range ps {
			orphans = append(orphans, q+"\x00"+main)
		}
	}
	sort.Strings(orphans)
	for _, o := range orphans {
		q, main, _ := strings.Cut(o, "\x00")
		fail(q, fmt.Errorf("part of %s, which does not exist", main))
	}
	return out, errs
}
