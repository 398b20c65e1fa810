// Package crd embeds config/crd, the CustomResourceDefinitions `make crds`
// generates, so that gitfleet's binary applies the very schemas a
// Kubernetes hub's API server is given (see internal/crdschema).
package crd

import "embed"

// Files holds every CRD file of this directory, one CRD each.
//
//go:embed *.yaml
var Files embed.FS
