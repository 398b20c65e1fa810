package render

import (
	"errors"
	"fmt"
	"io/fs"
	"path"

	fleet "github.com/gitfleet/gitfleet/api/v1beta1"
)

// ReadApprovals reads the approval requests below dir (normally
// "approvals"; namespaced ones may sit in a folder per namespace). The Git
// loop calls it after every fetch: a merged approval is an Approved
// condition in one of these files. Anything else in the folder, and any
// invalid request, is reported and left out. A missing folder is no error.
func ReadApprovals(fsys fs.FS, dir string) ([]*fleet.ApprovalRequest, []ManifestError) {
	dir = path.Clean(dir)
	if !fs.ValidPath(dir) {
		return nil, []ManifestError{{File: dir, Message: "approvals folder must be relative to the repository root and stay inside it"}}
	}
	r := &reader{fsys: fsys, opts: Options{}.WithDefaults()}
	docs, err := r.walk(dir,
		func(p string, d fs.DirEntry) bool { return p != dir && d.Name()[0] == '.' },
		func(fs.DirEntry) bool { return true })
	if errors.Is(err, fs.ErrNotExist) && len(docs) == 0 {
		return nil, nil
	}
	if err != nil {
		var merr *ManifestError
		if errors.As(err, &merr) {
			return nil, append(r.errs, *merr)
		}
		return nil, append(r.errs, ManifestError{File: dir, Message: fmt.Sprintf("cannot read approvals: %v", err)})
	}
	// Nothing is refused here: a broken request is left out alone and its
	// run keeps waiting, which deletes nothing.
	c, approvals, refusals := assemble(docs, r.errs, true, nil)
	errs := append(refusals, c.Errors...)
	sortErrors(errs)
	return approvals, errs
}
