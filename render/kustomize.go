package render

import (
	"fmt"
	"io/fs"
	"path"
	"strings"

	kjson "sigs.k8s.io/json"
	"sigs.k8s.io/kustomize/api/krusty"
	"sigs.k8s.io/kustomize/api/resmap"
	"sigs.k8s.io/kustomize/api/types"
	"sigs.k8s.io/kustomize/kyaml/filesys"
	"sigs.k8s.io/yaml"
)

// memRoot is where the commit is mounted in kustomize's in-memory
// filesystem; it is cut out of kustomize's messages again.
const memRoot = "/gitfleet-repo"

// originAnnotation is where kustomize records a resource's source file
// when buildMetadata has originAnnotations.
const originAnnotation = "config.kubernetes.io/origin"

// kustomize builds the kustomization in root on an in-memory copy of the
// repository. Remote references are refused before the build (krusty would
// clone with git or fetch over HTTP), so the build never leaves the commit.
func (r *reader) kustomize(root, kfile string) ([]document, error) {
	if err := checkKustomization(r.fsys, root, kfile, map[string]bool{}); err != nil {
		return nil, kustomizationFieldLine(r.fsys, err)
	}
	mem := filesys.MakeFsInMemory()
	tooBig, err := r.mount(mem, root)
	if err != nil {
		return nil, err
	}
	addedOrigin, err := requestOrigins(r.fsys, mem, kfile)
	if err != nil {
		return nil, err
	}
	k := krusty.MakeKustomizer(&krusty.Options{
		Reorder:          krusty.ReorderOptionNone,
		LoadRestrictions: types.LoadRestrictionsRootOnly,
		PluginConfig:     types.DisabledPluginConfig(),
	})
	rm, err := runKustomize(k, mem, memPath(root))
	if err != nil {
		msg := strings.ReplaceAll(err.Error(), memRoot+"/", "")
		msg = strings.ReplaceAll(msg, memRoot, ".")
		for _, f := range tooBig {
			if strings.Contains(msg, f) {
				return nil, &ManifestError{File: f, Message: fmt.Sprintf("file is larger than the %s limit (MaxFileSize)", sizeString(r.opts.MaxFileSize))}
			}
		}
		return nil, kustomizeErrorAt(r.fsys, root, kfile, msg)
	}
	var docs []document
	for _, res := range rm.Resources() {
		file := kfile
		if o, err := res.GetOrigin(); err == nil && o != nil {
			switch {
			case o.Path != "":
				file = path.Join(root, o.Path)
			case o.ConfiguredIn != "":
				file = path.Join(root, o.ConfiguredIn)
			}
		}
		data, err := res.MarshalJSON()
		if err != nil {
			return nil, &ManifestError{File: file, Message: fmt.Sprintf("encode kustomize output %s: %v", res.CurId(), err)}
		}
		obj := map[string]any{}
		if err := kjson.UnmarshalCaseSensitivePreserveInts(data, &obj); err != nil {
			return nil, &ManifestError{File: file, Message: fmt.Sprintf("decode kustomize output %s: %v", res.CurId(), err)}
		}
		if addedOrigin {
			dropAnnotation(obj, originAnnotation)
		}
		docs = append(docs, document{file: file, obj: obj})
	}
	return docs, nil
}

func memPath(p string) string {
	if p == "." {
		return memRoot
	}
	return memRoot + "/" + p
}

// mount copies the repository into mem, except hidden files and the
// approvals/ and status/ trees (at the repository root and under root).
// Files over MaxFileSize are left out and returned: they only matter if the
// build needs them.
func (r *reader) mount(mem filesys.FileSystem, root string) (tooBig []string, err error) {
	err = fs.WalkDir(r.fsys, ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return fmt.Errorf("render: %s: %w", p, err)
		}
		if MountSkips(root, p, d) {
			if d.IsDir() {
				return fs.SkipDir
			}
			return nil
		}
		if d.IsDir() {
			return nil
		}
		from := p
		switch {
		case d.Type()&fs.ModeSymlink != 0:
			// A bad link is an error even if the build may not need it:
			// which files a build reads is kustomize's business.
			target, merr := resolveLink(r.fsys, p)
			if merr != nil {
				return merr
			}
			from = target
		case !d.Type().IsRegular():
			return nil
		}
		before := len(r.errs)
		data, ok, err := r.readFile(from)
		if err != nil {
			return err
		}
		if !ok {
			r.errs = r.errs[:before] // not an error unless the build needs it
			tooBig = append(tooBig, p)
			return nil
		}
		if IsManifestFile(p) || IsKustomizationName(path.Base(p)) {
			var merr *ManifestError
			if data, merr = asText(p, data); merr != nil {
				return merr
			}
		}
		return mem.WriteFile(memPath(p), data)
	})
	return tooBig, err
}

// requestOrigins turns on kustomize's origin annotations in the root
// kustomization (in memory only) so every output object can name its source
// file. It reports whether it added them (and so must remove them).
func requestOrigins(fsys fs.FS, mem filesys.FileSystem, kfile string) (bool, error) {
	k, err := readKustomization(fsys, kfile)
	if err != nil {
		return false, err
	}
	meta, _ := k["buildMetadata"].([]any)
	for _, m := range meta {
		if m == types.OriginAnnotations {
			return false, nil
		}
	}
	k["buildMetadata"] = append(meta, types.OriginAnnotations)
	data, err := yaml.Marshal(k)
	if err != nil {
		return false, &ManifestError{File: kfile, Message: err.Error()}
	}
	return true, mem.WriteFile(memPath(kfile), data)
}

func dropAnnotation(obj map[string]any, key string) {
	meta, _ := obj["metadata"].(map[string]any)
	ann, _ := meta["annotations"].(map[string]any)
	if ann == nil {
		return
	}
	delete(ann, key)
	if len(ann) == 0 {
		delete(meta, "annotations")
	}
}

func readKustomization(fsys fs.FS, kfile string) (map[string]any, error) {
	data, err := fs.ReadFile(fsys, kfile)
	if err != nil {
		return nil, fmt.Errorf("render: %s: %w", kfile, err)
	}
	k := map[string]any{}
	if err := yaml.Unmarshal(data, &k); err != nil {
		return nil, syntaxError(kfile, data, err)
	}
	return k, nil
}

// runKustomize runs a build and turns a panic inside kustomize (which
// people's input must never cause in gitfleet's process) into an error.
func runKustomize(k *krusty.Kustomizer, fsys filesys.FileSystem, dir string) (rm resmap.ResMap, err error) {
	defer func() {
		if p := recover(); p != nil {
			rm, err = nil, fmt.Errorf("kustomize failed on this input: %v", p)
		}
	}()
	return k.Run(fsys, dir)
}
