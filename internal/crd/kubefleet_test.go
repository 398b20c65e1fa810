package crd_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	fleet "github.com/gitfleet/gitfleet/api/v1beta1"
	"github.com/gitfleet/gitfleet/internal/crdsummary"
)

// kubeFleetSummary is KubeFleet's CRDs summarized (make crd-summary), and
// kubeFleetAllowlist the deliberate differences from them, each with its
// reason (README, "CRDs").
var (
	kubeFleetSummary   = filepath.Join("testdata", "kubefleet-crds.summary")
	kubeFleetAllowlist = filepath.Join("testdata", "kubefleet-crds.allow")
)

// TestCRDsMatchKubeFleet: everything a client can observe of config/crd
// (names, scope, versions, printer columns, and per field its type, enum,
// default, bounds, list types and CEL rules) is KubeFleet's, but for the
// differences the allowlist names; an allowlist entry nothing matches
// fails too, so the list stays exactly what still differs.
func TestCRDsMatchKubeFleet(t *testing.T) {
	f, err := os.Open(kubeFleetSummary)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	want, err := crdsummary.Parse(f)
	if err != nil {
		t.Fatalf("%s: %v", kubeFleetSummary, err)
	}
	// gitfleet.io is gitfleet's own group: KubeFleet has no such CRDs.
	got, err := crdsummary.ReadDir(crdDir, fleet.PlacementGroup, fleet.ClusterGroup)
	if err != nil {
		t.Fatal(err)
	}
	a, err := os.Open(kubeFleetAllowlist)
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	allow, err := crdsummary.ParseAllowlist(a)
	if err != nil {
		t.Fatalf("%s: %v", kubeFleetAllowlist, err)
	}

	diffs := crdsummary.Diff(want, got)
	unexplained, used := allow.Filter(diffs)
	t.Logf("%d difference(s) from KubeFleet's CRDs, %d allowed by %s", len(diffs), len(diffs)-len(unexplained), kubeFleetAllowlist)
	if len(unexplained) > 0 {
		t.Errorf("config/crd differs from KubeFleet's CRDs (%s) in %d fact(s) %s does not allow:\n%s",
			kubeFleetSummary, len(unexplained), kubeFleetAllowlist, crdsummary.Report(unexplained))
	}
	var stale []string
	for i, n := range used {
		if n == 0 {
			stale = append(stale, "  "+allow.Entries[i].String())
		}
	}
	if len(stale) > 0 {
		t.Errorf("%s: entries that allow no difference any more (remove them):\n%s", kubeFleetAllowlist, strings.Join(stale, "\n"))
	}
}
