package render

import (
	"io/fs"
	"path"
	"slices"
	"strings"
)

// What a render reads, for those who must send it or tell whether a
// change touches it (render/renderproc, gitops): one definition, so that
// a process rendering a copy of the files reads exactly what Render would.

// KustomizationNames are the file names kustomize recognises, in its
// order: one of them directly under the path makes it a kustomize layout.
var KustomizationNames = []string{"kustomization.yaml", "kustomization.yml", "Kustomization"}

// MaxLinkHops bounds a chain of symbolic links; longer is a loop.
const MaxLinkHops = 40

// IsKustomizationName recognises kustomize's own files, which are
// configuration rather than manifests when found below a plain root.
func IsKustomizationName(name string) bool { return slices.Contains(KustomizationNames, name) }

// IsManifestFile reports whether a file name is one the plain reader
// reads: *.yaml, *.yml or *.json, not hidden.
func IsManifestFile(name string) bool {
	if strings.HasPrefix(path.Base(name), ".") {
		return false
	}
	switch strings.ToLower(path.Ext(name)) {
	case ".yaml", ".yml", ".json":
		return true
	}
	return false
}

// PlainReads reports whether the plain reader, walking root, reads the
// file p: a manifest that is not a kustomization.
func PlainReads(p string, d fs.DirEntry) bool {
	return IsManifestFile(p) && !IsKustomizationName(d.Name())
}

// PlainSkipsDir reports whether the plain reader, walking root, skips the
// folder p: hidden folders (.git, .github) and approvals/ and status/
// directly under root.
func PlainSkipsDir(root, p string, d fs.DirEntry) bool {
	if p == root {
		return false
	}
	if strings.HasPrefix(d.Name(), ".") {
		return true
	}
	return p == path.Join(root, ApprovalsDir) || p == path.Join(root, StatusDir)
}

// MountSkips reports whether a kustomize render, which copies the whole
// repository (walked from "."; a base may be outside root), leaves out p:
// hidden files and folders, and the approvals/ and status/ folders at the
// repository root and directly under root (unless that is root itself).
func MountSkips(root, p string, d fs.DirEntry) bool {
	if p != "." && strings.HasPrefix(d.Name(), ".") {
		return true
	}
	if !d.IsDir() || p == root {
		return false
	}
	return p == ApprovalsDir || p == StatusDir || p == path.Join(root, ApprovalsDir) || p == path.Join(root, StatusDir)
}
