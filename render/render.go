package render

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"path"
	"runtime"
	"sort"
	"strings"
	"sync"
	"sync/atomic"

	yaml "go.yaml.in/yaml/v3"
	"k8s.io/apimachinery/pkg/util/validation/field"

	fleet "github.com/gitfleet/gitfleet/api/v1beta1"
	"github.com/gitfleet/gitfleet/internal/crdschema"
)

// Folders directly under Path that are not hub content.
const (
	ApprovalsDir = "approvals"
	StatusDir    = "status"
)

// Render reads the hub content below opts.Path of fsys (os.DirFS of a
// working tree, or an fs.FS over a commit tree), whole or not at all: a
// problem that would leave an object of the tree out of the content (see
// RefusedError) fails the render with a *RefusedError, a failed kustomize
// build with a *ManifestError. What remains in Content.Errors are fleet
// objects whose fields are invalid, each left out alone: the hub keeps its
// last accepted version, as an API server would have refused that one
// object (Content.Withheld).
func Render(fsys fs.FS, opts Options) (*Content, error) {
	opts = opts.WithDefaults()
	root := path.Clean(opts.Path)
	if !fs.ValidPath(root) {
		return nil, fmt.Errorf("render: path %q must be relative to the repository root and stay inside it", opts.Path)
	}
	info, err := fs.Stat(fsys, root)
	if err != nil {
		return nil, fmt.Errorf("render: path %q: %w", root, err)
	}
	if !info.IsDir() {
		return nil, fmt.Errorf("render: path %q is not a folder", root)
	}
	r := &reader{fsys: fsys, opts: opts}
	var docs []document
	if kfile := findKustomization(fsys, root); kfile != "" {
		docs, err = r.kustomize(root, kfile)
	} else {
		docs, err = r.plain(root)
	}
	if err != nil {
		return nil, err
	}
	c, _, refusals := assemble(docs, r.errs, false, opts.Accepted)
	if len(refusals) > 0 {
		placeKustomizeOutput(fsys, refusals)
		return nil, &RefusedError{Errors: refusals, Others: c.Errors}
	}
	return c, nil
}

func findKustomization(fsys fs.FS, dir string) string {
	for _, n := range KustomizationNames {
		p := path.Join(dir, n)
		if info, err := fs.Stat(fsys, p); err == nil && !info.IsDir() {
			return p
		}
	}
	return ""
}

// reader reads files within the size limits and collects file errors.
type reader struct {
	fsys  fs.FS
	opts  Options
	total int64
	errs  []ManifestError
}

// errTotalSize is wrapped by the error that ends a render over the total limit.
var errTotalSize = errors.New("repository content exceeds the total size limit")

// readFile reads one file. A file over MaxFileSize is a per-file error
// (nil data, ok=false); going over MaxTotalSize is fatal.
func (r *reader) readFile(name string) (data []byte, ok bool, err error) {
	f, err := r.fsys.Open(name)
	if err != nil {
		return nil, false, fmt.Errorf("render: %s: %w", name, err)
	}
	defer f.Close()
	// Read one byte past the limit instead of trusting Stat: an fs.FS over
	// a Git tree may not know sizes up front.
	data, err = io.ReadAll(io.LimitReader(f, r.opts.MaxFileSize+1))
	if err != nil {
		return nil, false, fmt.Errorf("render: %s: %w", name, err)
	}
	if int64(len(data)) > r.opts.MaxFileSize {
		r.errs = append(r.errs, ManifestError{File: name, Line: 1,
			Message: fmt.Sprintf("file is larger than the %s limit (--max-file-size)", sizeString(r.opts.MaxFileSize))})
		return nil, false, nil
	}
	r.total += int64(len(data))
	if r.total > r.opts.MaxTotalSize {
		return nil, false, &ManifestError{File: name,
			Message: fmt.Sprintf("%v: more than %s read (MaxTotalSize)", errTotalSize, sizeString(r.opts.MaxTotalSize))}
	}
	return data, true, nil
}

func sizeString(n int64) string {
	if n >= 1<<20 && n%(1<<20) == 0 {
		return fmt.Sprintf("%d MiB", n>>20)
	}
	return fmt.Sprintf("%d bytes", n)
}

// plain reads every manifest file below root, in lexical order.
func (r *reader) plain(root string) ([]document, error) {
	return r.walk(root,
		func(p string, d fs.DirEntry) bool { return PlainSkipsDir(root, p, d) },
		func(d fs.DirEntry) bool { return !IsKustomizationName(d.Name()) })
}

// walk reads and splits every manifest file below root, in lexical order,
// skipping the folders skip names and the files keep refuses. Per-file
// problems are collected in r.errs; the error is for the walk itself.
func (r *reader) walk(root string, skip func(p string, d fs.DirEntry) bool, keep func(d fs.DirEntry) bool) ([]document, error) {
	var docs []document
	err := fs.WalkDir(r.fsys, root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return fmt.Errorf("render: %s: %w", p, err)
		}
		if d.IsDir() {
			if skip(p, d) {
				return fs.SkipDir
			}
			return nil
		}
		if !IsManifestFile(p) || !keep(d) {
			return nil
		}
		from := p
		switch {
		case d.Type()&fs.ModeSymlink != 0:
			target, merr := resolveLink(r.fsys, p)
			if merr != nil {
				r.errs = append(r.errs, *merr)
				return nil
			}
			from = target
		case !d.Type().IsRegular():
			return nil
		}
		data, ok, err := r.readFile(from)
		if err != nil || !ok {
			return err
		}
		data, merr := asText(p, data)
		if merr != nil {
			r.errs = append(r.errs, *merr)
			return nil
		}
		if strings.EqualFold(path.Ext(p), ".json") {
			if merr := checkJSON(p, data); merr != nil {
				r.errs = append(r.errs, *merr)
				return nil
			}
		}
		fileDocs, merr := splitDocuments(p, data)
		if merr != nil {
			r.errs = append(r.errs, *merr)
			return nil
		}
		if len(fileDocs) == 0 {
			// A file emptied by a bad merge or a failed write must not
			// delete what it held; deleting objects is deleting their file
			// (or their documents from a file that keeps others).
			r.errs = append(r.errs, ManifestError{File: p, Line: 1,
				Message: "the file holds no object (it is empty or only comments); to delete its objects, delete the file"})
			return nil
		}
		docs = append(docs, fileDocs...)
		return nil
	})
	return docs, err
}

// assemble decodes documents into Content (approval requests separately),
// dropping duplicates. refusals are the problems that refuse a commit
// whole (RefusedError): the file errors, the documents decodeDocument
// refuses and duplicates; Content.Errors has the others.
func assemble(docs []document, fileErrs []ManifestError, inApprovals bool, known crdschema.Accepted) (c *Content, approvals []*fleet.ApprovalRequest, refusals []ManifestError) {
	c = &Content{Sources: map[ObjectRef]Source{}, Accepted: crdschema.Accepted{}}
	refusals = append(refusals, fileErrs...)
	var objs []*decoded
	memo := schemaMemo{known: known, accepted: c.Accepted, mu: &sync.Mutex{}}
	for _, r := range decodeAll(docs, inApprovals, memo) {
		o, errs, refused := r.o, r.errs, r.refused
		if refused {
			refusals = append(refusals, errs...)
		} else {
			c.Errors = append(c.Errors, errs...)
		}
		if o != nil {
			objs = append(objs, o)
		}
	}
	// Two definitions of one object: neither is trusted, both files named.
	first := map[ObjectRef]*decoded{}
	dup := map[ObjectRef]bool{}
	for _, o := range objs {
		if f, seen := first[o.ref]; seen {
			dup[o.ref] = true
			refusals = append(refusals, ManifestError{File: o.src.File, Line: o.src.Line, Kind: o.ref.Kind,
				Namespace: o.ref.Namespace, Name: o.ref.Name,
				Message: fmt.Sprintf("duplicate definition: %s is also defined in %s", o.ref, location(f.src))})
			continue
		}
		first[o.ref] = o
	}
	// A manifest an envelope wraps is delivered as itself: it may not be
	// another resource of the tree, nor wrapped twice.
	for _, o := range objs {
		for _, w := range o.wrapped {
			f, seen := first[w]
			if !seen {
				first[w] = o
				continue
			}
			if f.resource == nil && f.wrapped == nil {
				continue // a fleet object the hub holds, not a resource
			}
			dup[o.ref] = true
			refusals = append(refusals, ManifestError{File: o.src.File, Line: o.src.Line, Kind: o.ref.Kind,
				Namespace: o.ref.Namespace, Name: o.ref.Name,
				Message: fmt.Sprintf("duplicate definition: %s, which this envelope wraps, is also defined in %s", w, location(f.src))})
		}
	}
	for _, o := range objs {
		if dup[o.ref] || o.withheld {
			continue
		}
		c.Sources[o.ref] = o.src
		switch {
		case o.member != nil:
			c.Members = append(c.Members, o.member)
		case o.place != nil:
			c.Placements = append(c.Placements, o.place)
		case o.strategy != nil:
			c.Strategies = append(c.Strategies, o.strategy)
		case o.run != nil:
			c.Runs = append(c.Runs, o.run)
		case o.resource != nil:
			c.Resources = append(c.Resources, o.resource)
		case o.approval != nil:
			approvals = append(approvals, o.approval)
		case o.cro != nil:
			c.ClusterResourceOverrides = append(c.ClusterResourceOverrides, o.cro)
		case o.ro != nil:
			c.ResourceOverrides = append(c.ResourceOverrides, o.ro)
		case o.eviction != nil:
			c.Evictions = append(c.Evictions, o.eviction)
		case o.budget != nil:
			c.DisruptionBudgets = append(c.DisruptionBudgets, o.budget)
		case o.window != nil:
			c.RolloutWindows = append(c.RolloutWindows, o.window)
		}
	}
	c.sort()
	nodes := map[ObjectRef]*yaml.Node{}
	for _, o := range objs {
		if o.node != nil && !dup[o.ref] && !o.withheld {
			nodes[o.ref] = o.node
		}
	}
	c.checkOverrideSelections(nodes)
	sort.Slice(approvals, func(i, j int) bool {
		if approvals[i].Namespace != approvals[j].Namespace {
			return approvals[i].Namespace < approvals[j].Namespace
		}
		return approvals[i].Name < approvals[j].Name
	})
	sortErrors(refusals)
	return c, approvals, refusals
}

func location(s Source) string {
	if s.Line > 0 {
		return fmt.Sprintf("%s:%d", s.File, s.Line)
	}
	return s.File
}

// sort orders every list deterministically: fleet objects by namespace and
// name, resources in SortResources order, errors by file and line.
func (c *Content) sort() {
	byKey := func(ns1, n1, ns2, n2 string) bool {
		if ns1 != ns2 {
			return ns1 < ns2
		}
		return n1 < n2
	}
	sort.Slice(c.Members, func(i, j int) bool { return c.Members[i].Name < c.Members[j].Name })
	sort.Slice(c.Placements, func(i, j int) bool {
		return byKey(c.Placements[i].Namespace, c.Placements[i].Name, c.Placements[j].Namespace, c.Placements[j].Name)
	})
	sort.Slice(c.Strategies, func(i, j int) bool {
		return byKey(c.Strategies[i].Namespace, c.Strategies[i].Name, c.Strategies[j].Namespace, c.Strategies[j].Name)
	})
	sort.Slice(c.Runs, func(i, j int) bool {
		return byKey(c.Runs[i].Namespace, c.Runs[i].Name, c.Runs[j].Namespace, c.Runs[j].Name)
	})
	sort.Slice(c.ClusterResourceOverrides, func(i, j int) bool {
		return c.ClusterResourceOverrides[i].Name < c.ClusterResourceOverrides[j].Name
	})
	sort.Slice(c.ResourceOverrides, func(i, j int) bool {
		return byKey(c.ResourceOverrides[i].Namespace, c.ResourceOverrides[i].Name, c.ResourceOverrides[j].Namespace, c.ResourceOverrides[j].Name)
	})
	sort.Slice(c.Evictions, func(i, j int) bool { return c.Evictions[i].Name < c.Evictions[j].Name })
	sort.Slice(c.DisruptionBudgets, func(i, j int) bool { return c.DisruptionBudgets[i].Name < c.DisruptionBudgets[j].Name })
	sort.Slice(c.RolloutWindows, func(i, j int) bool { return c.RolloutWindows[i].Name < c.RolloutWindows[j].Name })
	SortResources(c.Resources)
	sortErrors(c.Errors)
}

// sortErrors orders errors by file and line.
func sortErrors(errs []ManifestError) {
	sort.SliceStable(errs, func(i, j int) bool {
		if errs[i].File != errs[j].File {
			return errs[i].File < errs[j].File
		}
		return errs[i].Line < errs[j].Line
	})
}

// checkOverrideSelections applies the override webhooks' checks across
// objects (a resource selected by two overrides, the count limits) and
// takes the overrides concerned out, as the API server would have refused
// them; callers keep a refused override's last accepted version (Withheld).
// nodes are the overrides' documents, for the line of each error's field.
func (c *Content) checkOverrideSelections(nodes map[ObjectRef]*yaml.Node) {
	croErrs, roErrs := fleet.ValidateOverrideSelections(c.ClusterResourceOverrides, c.ResourceOverrides)
	if len(croErrs) == 0 && len(roErrs) == 0 {
		return
	}
	refuse := func(kind, namespace, name string, errs field.ErrorList) {
		ref := ObjectRef{Group: fleet.PlacementGroup, Kind: kind, Namespace: namespace, Name: name}
		src := c.Sources[ref]
		for _, e := range errs {
			line := lineOf(nodes[ref], e.Field)
			if line == 0 {
				line = src.Line
			}
			c.Errors = append(c.Errors, ManifestError{File: src.File, Line: line, Kind: kind, Namespace: namespace,
				Name: name, Field: e.Field, Message: e.ErrorBody()})
		}
		delete(c.Sources, ref)
	}
	cros := c.ClusterResourceOverrides[:0:0]
	for i, o := range c.ClusterResourceOverrides {
		if errs := croErrs[i]; len(errs) > 0 {
			refuse(o.Kind, "", o.Name, errs)
			continue
		}
		cros = append(cros, o)
	}
	ros := c.ResourceOverrides[:0:0]
	for i, o := range c.ResourceOverrides {
		if errs := roErrs[i]; len(errs) > 0 {
			refuse(o.Kind, o.Namespace, o.Name, errs)
			continue
		}
		ros = append(ros, o)
	}
	c.ClusterResourceOverrides, c.ResourceOverrides = cros, ros
	sortErrors(c.Errors)
}

// decodeResult is decodeDocument's answer for one document.
type decodeResult struct {
	o       *decoded
	errs    []ManifestError
	refused bool
}

// decodeAll decodes docs on every processor, each answer at its
// document's index: validating by the CRD schemas is most of a render's
// work (10,000 objects of a fleet), and documents are independent until
// they are put together, in order, by the caller.
func decodeAll(docs []document, inApprovals bool, memo schemaMemo) []decodeResult {
	out := make([]decodeResult, len(docs))
	workers := min(runtime.GOMAXPROCS(0), len(docs)/minDocsPerWorker)
	if workers <= 1 {
		for i, d := range docs {
			out[i].o, out[i].errs, out[i].refused = decodeDocument(d, inApprovals, memo)
		}
		return out
	}
	var (
		next atomic.Int64
		wg   sync.WaitGroup
	)
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := int(next.Add(1) - 1); i < len(docs); i = int(next.Add(1) - 1) {
				out[i].o, out[i].errs, out[i].refused = decodeDocument(docs[i], inApprovals, memo)
			}
		}()
	}
	wg.Wait()
	return out
}

// minDocsPerWorker keeps small trees (a quickstart) on one goroutine.
const minDocsPerWorker = 64
