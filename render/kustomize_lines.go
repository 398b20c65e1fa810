package render

import (
	"errors"
	"io/fs"
	"path"
	"regexp"
	"slices"
	"strconv"
	"strings"

	yaml "go.yaml.in/yaml/v3"
)

// Patterns of kustomize's error messages (kustomize API v0.21) that say
// where the problem is.
var (
	// A base's kustomization is being built: what follows is about it.
	kustomizeDescentRE = regexp.MustCompile(`(?:recursed accumulation of path|couldn't make target for path) '([^']+)'`)
	// kyaml names the line of a resource file that does not parse, with
	// the file as the kustomization lists it.
	kustomizeYAMLLineRE = regexp.MustCompile(`yaml: line (\d+): .* in File: (\S+)`)
	// A kustomization that does not decode: a misspelled or mistyped field.
	kustomizeUnknownFieldRE = regexp.MustCompile(`invalid Kustomization: json: unknown field "([^"]+)"`)
	kustomizeFieldTypeRE    = regexp.MustCompile(`invalid Kustomization: json: cannot unmarshal .* Go struct field Kustomization\.(\w+)`)
	documentSeparatorRE     = regexp.MustCompile(`(?m)^---`)
	// Anything kustomize quotes: paths of resources, patches, generator files.
	kustomizeQuotedRE = regexp.MustCompile(`'([^'\s]+)'`)
)

// kustomizeErrorAt names where a failed build went wrong, as precisely as
// kustomize's message (msg, with the in-memory root cut out) allows: the
// line kustomize gives for a resource that does not parse, else the
// kustomization (the root's, or the base's the message descended into) and
// the line of the entry the message names (an unknown or mistyped field,
// the resources item of a missing file, the patch that applies to
// nothing). What it cannot place stays on kfile without a line.
func kustomizeErrorAt(fsys fs.FS, root, kfile, msg string) *ManifestError {
	e := &ManifestError{File: kfile, Message: "kustomize build failed: " + msg}
	dir, file, rest := root, kfile, msg
	for _, m := range kustomizeDescentRE.FindAllStringSubmatchIndex(msg, -1) {
		base := path.Clean(msg[m[2]:m[3]])
		if k := findKustomization(fsys, base); k != "" && fs.ValidPath(base) {
			dir, file, rest = base, k, msg[m[1]:]
		}
	}
	e.File = file
	if m := kustomizeYAMLLineRE.FindStringSubmatch(rest); m != nil {
		if f := path.Join(dir, m[2]); fs.ValidPath(f) {
			e.File, e.Line = f, resourceSyntaxLine(fsys, f, atoi(m[1]))
			return e
		}
	}
	k, node := kustomizationNode(fsys, file)
	if node == nil {
		return e
	}
	at := func(field string) *ManifestError {
		e.Field, e.Line = field, lineOf(node, field)
		return e
	}
	if m := kustomizeUnknownFieldRE.FindStringSubmatch(rest); m != nil {
		return at(m[1])
	}
	if m := kustomizeFieldTypeRE.FindStringSubmatch(rest); m != nil {
		return at(m[1])
	}
	// A resource already added by an earlier entry is the later entry's
	// fault; anything else (a missing file) fails at its first mention.
	refs := kustomizationRefs(k)
	if strings.Contains(rest, "already registered id") {
		slices.Reverse(refs)
	}
	for _, m := range kustomizeQuotedRE.FindAllStringSubmatch(rest, -1) {
		q := path.Clean(m[1])
		for _, ref := range refs {
			if v := path.Clean(ref.value); v == q || path.Join(dir, v) == q {
				return at(ref.field)
			}
		}
	}
	// A patch that applies to nothing, or whose operation fails, and a
	// plugin kustomize will not run are not named by file: with one such
	// entry, it is that one.
	only := func(fields ...string) (string, bool) {
		var entries []string
		for _, f := range fields {
			list, _ := k[f].([]any)
			for i := range list {
				entries = append(entries, f+"["+strconv.Itoa(i)+"]")
			}
		}
		if len(entries) != 1 {
			return "", false
		}
		return entries[0], true
	}
	if strings.Contains(rest, "external plugin") {
		if f, ok := only("generators", "transformers", "validators"); ok {
			return at(f)
		}
	} else if strings.Contains(rest, "patch") || strings.Contains(rest, "operation does not apply") {
		if f, ok := only("patches", "patchesStrategicMerge", "patchesJson6902"); ok {
			return at(f)
		}
	}
	return e
}

// resourceSyntaxLine is the line in file of a YAML syntax error that
// kustomize placed at line of its document: kyaml counts lines from the
// start of the document, so the file is parsed again for the file's line.
// Without a verdict of that parse, line stands if file is one document.
func resourceSyntaxLine(fsys fs.FS, file string, line int) int {
	data, err := fs.ReadFile(fsys, file)
	if err != nil {
		return 0
	}
	if text, merr := asText(file, data); merr == nil {
		data = text
		if _, merr := splitDocuments(file, data); merr != nil && merr.Line > 0 {
			return merr.Line
		}
	}
	if documentSeparatorRE.Match(data) {
		return 0
	}
	return line
}

// kustomizationFieldLine gives an error of checkKustomization, which names
// a kustomization's field, that field's line.
func kustomizationFieldLine(fsys fs.FS, err error) error {
	var e *ManifestError
	if !errors.As(err, &e) || e.Line > 0 || e.Field == "" {
		return err
	}
	if _, n := kustomizationNode(fsys, e.File); n != nil {
		e.Line = lineOf(n, e.Field)
	}
	return err
}

// kustomizationNode reads a kustomization as a map and as its YAML node
// tree, for lines; nil when it does not read (Render reports that).
func kustomizationNode(fsys fs.FS, kfile string) (map[string]any, *yaml.Node) {
	k, err := readKustomization(fsys, kfile)
	if err != nil {
		return nil, nil
	}
	data, err := fs.ReadFile(fsys, kfile)
	if err != nil {
		return nil, nil
	}
	return k, (&fileText{data: data}).root(0)
}

func atoi(s string) int {
	n, _ := strconv.Atoi(strings.TrimSpace(s))
	return n
}
