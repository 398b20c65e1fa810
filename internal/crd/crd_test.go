package crd_test

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"testing"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"sigs.k8s.io/yaml"

	fleet "github.com/gitfleet/gitfleet/api/v1beta1"
)

// repoRoot is where make and controller-gen run; config/crd lives there.
const repoRoot = "../.."

var crdDir = filepath.Join(repoRoot, "config", "crd")

// controllerToolsVersion is the controller-gen version the Makefile pins,
// so the test and `make crds` cannot drift apart.
func controllerToolsVersion(t *testing.T) string {
	t.Helper()
	mk, err := os.ReadFile(filepath.Join(repoRoot, "Makefile"))
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`(?m)^CONTROLLER_TOOLS_VERSION \?= (\S+)$`).FindSubmatch(mk)
	if m == nil {
		t.Fatal("Makefile: no CONTROLLER_TOOLS_VERSION ?= line")
	}
	return string(m[1])
}

// TestCRDsAreUpToDate regenerates the CRDs into a temporary directory and
// compares them with config/crd, file by file.
func TestCRDsAreUpToDate(t *testing.T) {
	fresh := t.TempDir()
	controllerGen(t, "crd", "paths=./internal/crd/...", "output:crd:artifacts:config="+fresh)

	want := readDir(t, fresh)
	got := readDir(t, crdDir)
	for name, w := range want {
		g, ok := got[name]
		switch {
		case !ok:
			t.Errorf("config/crd/%s is missing; run make crds", name)
		case !bytes.Equal(g, w):
			t.Errorf("config/crd/%s is stale; run make crds", name)
		}
	}
	for name := range got {
		if _, ok := want[name]; !ok {
			t.Errorf("config/crd/%s is no longer generated; run make crds", name)
		}
	}
}

func readDir(t *testing.T, dir string) map[string][]byte {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	files := map[string][]byte{}
	for _, e := range entries {
		if filepath.Ext(e.Name()) != ".yaml" {
			continue // crd.go embeds the CRDs
		}
		b, err := os.ReadFile(filepath.Join(dir, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		files[e.Name()] = b
	}
	return files
}

// crd is the part of a CustomResourceDefinition these tests look at.
type crd struct {
	Spec struct {
		Group string `json:"group"`
		Names struct {
			Kind       string   `json:"kind"`
			Plural     string   `json:"plural"`
			ShortNames []string `json:"shortNames"`
		} `json:"names"`
		Scope    string `json:"scope"`
		Versions []struct {
			Name    string `json:"name"`
			Served  bool   `json:"served"`
			Storage bool   `json:"storage"`
		} `json:"versions"`
	} `json:"spec"`
}

func readCRDs(t *testing.T) map[string]crd {
	t.Helper()
	crds := map[string]crd{}
	for name, b := range readDir(t, crdDir) {
		var c crd
		if err := yaml.Unmarshal(b, &c); err != nil {
			t.Fatalf("config/crd/%s: %v", name, err)
		}
		if want := c.Spec.Group + "_" + c.Spec.Names.Plural + ".yaml"; name != want {
			t.Errorf("config/crd/%s holds the CRD of %s; want the file named %s", name, c.Spec.Names.Kind, want)
		}
		crds[c.Spec.Names.Kind] = c
	}
	return crds
}

// servedVersions are the versions KubeFleet serves of a kind besides
// v1beta1 (its storage version), with the same schemas or, for v1alpha1,
// without a conversion webhook; kinds not listed serve v1beta1 alone here.
var servedVersions = map[string][]string{
	fleet.KindClusterResourcePlacement:                 {"v1"},
	fleet.KindResourcePlacement:                        {"v1"},
	fleet.KindClusterResourceBinding:                   {"v1"},
	fleet.KindClusterResourceSnapshot:                  {"v1"},
	fleet.KindClusterSchedulingPolicySnapshot:          {"v1"},
	fleet.KindMemberCluster:                            {"v1"},
	fleet.KindClusterStagedUpdateStrategy:              {"v1", "v1alpha1"},
	fleet.KindStagedUpdateStrategy:                     {"v1"},
	fleet.KindClusterStagedUpdateRun:                   {"v1", "v1alpha1"},
	fleet.KindStagedUpdateRun:                          {"v1"},
	fleet.KindClusterApprovalRequest:                   {"v1", "v1alpha1"},
	fleet.KindApprovalRequest:                          {"v1"},
	fleet.KindClusterResourceOverride:                  {"v1", "v1alpha1"},
	fleet.KindResourceOverride:                         {"v1", "v1alpha1"},
	fleet.KindClusterResourceOverrideSnapshot:          {"v1", "v1alpha1"},
	fleet.KindResourceOverrideSnapshot:                 {"v1", "v1alpha1"},
	fleet.KindClusterResourcePlacementEviction:         {"v1alpha1"},
	fleet.KindClusterResourcePlacementDisruptionBudget: {"v1alpha1"},
	fleet.KindWork:                                     {"v1"},
	fleet.KindInternalMemberCluster:                    {"v1"},
	fleet.KindAppliedWork:                              {"v1"},
}

// gitfleetKinds are gitfleet's own kinds (group gitfleet.io, stored at
// v1alpha1, cluster-scoped) a Kubernetes hub keeps on its API server.
var gitfleetKinds = map[string]bool{fleet.KindRolloutWindow: true}

// TestEveryKindHasACRD: config/crd has one CRD per kind gitfleet serves, in
// its group, with the scope api/v1beta1 picks the kind by (an empty
// namespace is the cluster-scoped kind of a family), storing v1beta1 and
// serving it with the versions KubeFleet serves (their schemas are
// KubeFleet's: TestCRDsMatchKubeFleet).
func TestEveryKindHasACRD(t *testing.T) {
	// The overrides and their snapshots are pairs of their own Go types.
	scope := map[string]string{fleet.KindMemberCluster: "Cluster",
		fleet.KindClusterResourceOverride: "Cluster", fleet.KindResourceOverride: "Namespaced",
		fleet.KindClusterResourceOverrideSnapshot: "Cluster", fleet.KindResourceOverrideSnapshot: "Namespaced",
		fleet.KindClusterResourcePlacementEviction: "Cluster", fleet.KindClusterResourcePlacementDisruptionBudget: "Cluster",
		fleet.KindWork: "Namespaced", fleet.KindInternalMemberCluster: "Namespaced", fleet.KindAppliedWork: "Cluster"}
	for _, kindOf := range families {
		scope[kindOf("")] = "Cluster"
		scope[kindOf("ns")] = "Namespaced"
	}
	for kind := range gitfleetKinds {
		scope[kind] = "Cluster"
	}
	crds := readCRDs(t)
	for kind, wantScope := range scope {
		c, ok := crds[kind]
		if !ok {
			t.Errorf("no CRD for %s in config/crd", kind)
			continue
		}
		wantGroup, stored := fleet.PlacementGroup, fleet.Version
		switch {
		case kind == fleet.KindMemberCluster || kind == fleet.KindInternalMemberCluster:
			wantGroup = fleet.ClusterGroup
		case gitfleetKinds[kind]:
			wantGroup, stored = fleet.GitfleetGroup, fleet.GitfleetGroupVersion.Version
		}
		if c.Spec.Group != wantGroup || c.Spec.Scope != wantScope {
			t.Errorf("%s: group %s, scope %s; want %s, %s", kind, c.Spec.Group, c.Spec.Scope, wantGroup, wantScope)
		}
		want := append([]string{stored}, servedVersions[kind]...)
		var got []string
		for _, v := range c.Spec.Versions {
			got = append(got, v.Name)
			if !v.Served || v.Storage != (v.Name == stored) {
				t.Errorf("%s: version %s served %v, stored %v; want served, and stored only at %s", kind, v.Name, v.Served, v.Storage, stored)
			}
		}
		slices.Sort(want)
		slices.Sort(got)
		if !slices.Equal(got, want) {
			t.Errorf("%s: versions %v; want %v", kind, got, want)
		}
	}
	for kind := range crds {
		if _, ok := scope[kind]; !ok {
			t.Errorf("config/crd has a CRD for %s, which gitfleet does not serve", kind)
		}
	}
}

// ownSchema are the versions served with a schema of their own: KubeFleet's
// v1alpha1 staged update runs and strategies (../placement/v1alpha1) lack
// v1beta1's state, before-stage tasks and maxConcurrency. Without a
// conversion webhook an object written at v1alpha1 is stored as it is and
// read at v1beta1 with its defaults, as on KubeFleet's hub
// (TestCRDsOnKubeAPIServer, "v1 and v1alpha1 are served beside v1beta1").
var ownSchema = map[string][]string{
	fleet.KindClusterStagedUpdateRun:      {"v1alpha1"},
	fleet.KindClusterStagedUpdateStrategy: {"v1alpha1"},
}

// TestServedVersionsShareOneSchema: every version a CRD serves but those of
// ownSchema has the schema (descriptions aside) and subresources of the
// storage version, so the API server converts between them by changing
// apiVersion alone (conversion None) and no conversion webhook is needed.
// Printer columns may differ, as KubeFleet's do (its v1alpha1 evictions
// have none).
func TestServedVersionsShareOneSchema(t *testing.T) {
	for name, b := range readDir(t, crdDir) {
		var c apiextensionsv1.CustomResourceDefinition
		if err := yaml.Unmarshal(b, &c); err != nil {
			t.Fatalf("config/crd/%s: %v", name, err)
		}
		if conv := c.Spec.Conversion; conv != nil && conv.Strategy != apiextensionsv1.NoneConverter {
			t.Errorf("%s: conversion %s; want None", c.Spec.Names.Kind, conv.Strategy)
		}
		var storage *apiextensionsv1.CustomResourceDefinitionVersion
		for i := range c.Spec.Versions {
			if c.Spec.Versions[i].Storage {
				storage = &c.Spec.Versions[i]
			}
		}
		if storage == nil {
			t.Errorf("%s: no storage version", c.Spec.Names.Kind)
			continue
		}
		for _, v := range c.Spec.Versions {
			if v.Name == storage.Name || slices.Contains(ownSchema[c.Spec.Names.Kind], v.Name) {
				continue
			}
			if !reflect.DeepEqual(withoutDescriptions(v.Schema), withoutDescriptions(storage.Schema)) ||
				!reflect.DeepEqual(v.Subresources, storage.Subresources) {
				t.Errorf("%s: version %s differs from %s, the storage version, in its schema or subresources",
					c.Spec.Names.Kind, v.Name, storage.Name)
			}
		}
	}
}

// withoutDescriptions is a schema with its descriptions (the Go doc comments
// of each version's root type, which `kubectl explain` prints) left out.
func withoutDescriptions(v *apiextensionsv1.CustomResourceValidation) any {
	if v == nil {
		return nil
	}
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	var m any
	if err := json.Unmarshal(b, &m); err != nil {
		panic(err)
	}
	var strip func(any) any
	strip = func(x any) any {
		switch x := x.(type) {
		case map[string]any:
			if _, text := x["description"].(string); text {
				delete(x, "description") // not a field named description
			}
			for k, e := range x {
				x[k] = strip(e)
			}
		case []any:
			for i, e := range x {
				x[i] = strip(e)
			}
		}
		return x
	}
	return strip(m)
}
