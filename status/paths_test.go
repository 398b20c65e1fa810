package status

import (
	"fmt"
	"strconv"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	fleet "github.com/gitfleet/gitfleet/api/v1beta1"
)

func TestPathForPlacesEveryFamilyAsDesigned(t *testing.T) {
	cases := []struct {
		obj  runtime.Object
		want string
	}{
		{waitingRun(""), "status/runs/example-run.yaml"},
		{waitingRun("team-a"), "status/runs/team-a/example-run.yaml"},
		{placement(""), "status/placements/example-placement.yaml"},
		{placement("team-a"), "status/placements/team-a/example-placement.yaml"},
		{snapshot("", 1, -1), "status/snapshots/example-placement/1.yaml"},
		{snapshot("", 1, 2), "status/snapshots/example-placement/1-2.yaml"},
		{snapshot("team-a", 10, -1), "status/snapshots/team-a/example-placement/10.yaml"},
		{policySnapshot(""), "status/policysnapshots/example-placement/0.yaml"},
		{policySnapshot("team-a"), "status/policysnapshots/team-a/example-placement/0.yaml"},
		{binding("", "member2"), "status/bindings/example-placement/member2.yaml"},
		{binding("team-a", "member2"), "status/bindings/team-a/example-placement/member2.yaml"},
		{member("member1"), "status/clusters/member1.yaml"},
		{strategy(""), "status/strategies/example-strategy.yaml"},
		{strategy("team-a"), "status/strategies/team-a/example-strategy.yaml"},
		{approval(""), "approvals/example-run-after-canary.yaml"},
		{approval("team-a"), "approvals/team-a/example-run-after-canary.yaml"},
		{&fleet.ClusterResourceOverrideSnapshot{ObjectMeta: overrideSnapshotMeta("", "env-labels", 3)},
			"status/overridesnapshots/env-labels/3.yaml"},
		{&fleet.ResourceOverrideSnapshot{ObjectMeta: overrideSnapshotMeta("team-a", "env-config", 0)},
			"status/overridesnapshots/team-a/env-config/0.yaml"},
		{&fleet.ClusterResourcePlacementEviction{ObjectMeta: metav1.ObjectMeta{Name: "evict-member1"}},
			"status/evictions/evict-member1.yaml"},
	}
	for _, tc := range cases {
		got, err := PathFor(tc.obj)
		if err != nil {
			t.Errorf("%s: %v", tc.want, err)
			continue
		}
		if got != tc.want {
			t.Errorf("PathFor = %q, want %q", got, tc.want)
		}
		ref, err := RefFor(got)
		if err != nil {
			t.Errorf("RefFor(%q): %v", got, err)
			continue
		}
		if !refMatches(ref, tc.obj) {
			t.Errorf("RefFor(%q) = %+v does not match the object it came from", got, ref)
		}
	}
}

func overrideSnapshotMeta(namespace, override string, index int) metav1.ObjectMeta {
	return metav1.ObjectMeta{Name: fmt.Sprintf(fleet.OverrideSnapshotNameFmt, override, index), Namespace: namespace,
		Labels: map[string]string{fleet.OverrideTrackingLabel: override, fleet.OverrideIndexLabel: strconv.Itoa(index)}}
}

func TestRefForNamesWhatThePathPromises(t *testing.T) {
	cases := map[string]Ref{
		"status/snapshots/p/3-1.yaml":            {Kind: fleet.KindClusterResourceSnapshot, Placement: "p", Name: "p-3-1"},
		"status/snapshots/ns/p/3.yaml":           {Kind: fleet.KindResourceSnapshot, Namespace: "ns", Placement: "p", Name: "p-3-snapshot"},
		"status/policysnapshots/p/2.yaml":        {Kind: fleet.KindClusterSchedulingPolicySnapshot, Placement: "p", Name: "p-2"},
		"status/bindings/ns/p/member1.yaml":      {Kind: fleet.KindResourceBinding, Namespace: "ns", Placement: "p", Cluster: "member1"},
		"approvals/example-run-before-prod.yaml": {Kind: fleet.KindClusterApprovalRequest, Name: "example-run-before-prod"},
	}
	for p, want := range cases {
		got, err := RefFor(p)
		if err != nil {
			t.Errorf("RefFor(%q): %v", p, err)
			continue
		}
		if got != want {
			t.Errorf("RefFor(%q) = %+v, want %+v", p, got, want)
		}
	}
}

func TestRefForRejectsForeignPaths(t *testing.T) {
	for _, p := range []string{
		"status/runs/a.yml",
		"status/runs/a/b/c.yaml",
		"status/clusters/ns/member1.yaml",
		"status/evictions/ns/evict.yaml",
		"status/snapshots/p/latest.yaml",
		"status/snapshots/p/01.yaml",
		"status/policysnapshots/p/1-1.yaml",
		"status/bindings/member1.yaml",
		"status/things/x.yaml",
		"manifests/app.yaml",
		"status/runs/../x.yaml",
		"approvals.yaml",
	} {
		if ref, err := RefFor(p); err == nil {
			t.Errorf("RefFor(%q) = %+v, want an error", p, ref)
		}
	}
}

func TestPathForRefusesObjectsThatWouldCollide(t *testing.T) {
	renamed := snapshot("", 1, -1)
	renamed.Name = "something-else"
	noIndex := snapshot("", 1, -1)
	delete(noIndex.Labels, fleet.ResourceIndexLabel)
	badSub := snapshot("", 1, 0)
	badSub.Annotations[fleet.SubindexOfResourceSnapshotAnnotation] = "x"
	noPlacement := binding("", "member1")
	noPlacement.Labels = nil
	slashName := waitingRun("")
	slashName.Name = "a/b"
	dots := member("..")
	policy := policySnapshot("")
	policy.Name = "example-placement-7"
	cases := map[string]runtime.Object{
		"name does not match its labels, want \"example-placement-1-snapshot\"": renamed,
		"label kubernetes-fleet.io/resource-index=\"\" is not an index":         noIndex,
		"is not an index": badSub,
		"label kubernetes-fleet.io/parent-CRP is empty":              noPlacement,
		`name "a/b" cannot be a file name`:                           slashName,
		`name ".." cannot be a file name`:                            dots,
		`name does not match its labels, want "example-placement-0"`: policy,
	}
	for want, obj := range cases {
		_, err := PathFor(obj)
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("PathFor error = %v, want %q", err, want)
		}
	}
}

// refMatches reports whether obj is the object the path's ref promised.
func refMatches(r Ref, obj runtime.Object) bool {
	mo, ok := obj.(metav1.Object)
	if !ok || kindFor(obj) != r.Kind || mo.GetNamespace() != r.Namespace {
		return false
	}
	if b, ok := obj.(*fleet.Binding); ok {
		return b.Labels[fleet.PlacementTrackingLabel] == r.Placement && b.Spec.TargetCluster == r.Cluster
	}
	return mo.GetName() == r.Name
}
