package simulate

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	fleet "github.com/gitfleet/gitfleet/api/v1beta1"
	"github.com/gitfleet/gitfleet/internal/clock"
	"github.com/gitfleet/gitfleet/reconciler/hub/embedded"
	"github.com/gitfleet/gitfleet/reconciler/member"
	"github.com/gitfleet/gitfleet/status/printers"
)

// -o yaml prints, after what a simulated member holds, the objects it kept
// because they are annotated prune: disabled, and not those it pruned.
func TestYAMLPrintsWhatAMemberKeptAnnotatedPruneDisabled(t *testing.T) {
	h := embedded.New(clock.NewFake(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)), nil)
	m := &fleet.MemberCluster{ObjectMeta: metav1.ObjectMeta{Name: "member1",
		Annotations: map[string]string{fleet.DriverAnnotation: fleet.DriverSimulated}}}
	cm := func(name string, annotations map[string]string) *unstructured.Unstructured {
		u := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "v1", "kind": "ConfigMap",
			"metadata": map[string]any{"name": name, "namespace": "test-namespace"}}}
		u.SetAnnotations(annotations)
		return u
	}
	deliver := func(gen int64, resources ...*unstructured.Unstructured) {
		t.Helper()
		b := &fleet.Binding{ObjectMeta: metav1.ObjectMeta{Name: "example-placement-member1", Generation: gen,
			Labels: map[string]string{fleet.PlacementTrackingLabel: "example-placement"}},
			Spec: fleet.ResourceBindingSpec{TargetCluster: "member1", ResourceSnapshotName: "s"}}
		if err := h.Members().For(m).Deliver(context.Background(), member.Delivery{Binding: b, Member: m, Resources: resources}); err != nil {
			t.Fatal(err)
		}
	}
	deliver(1, cm("held", nil), cm("kept", map[string]string{fleet.PruneAnnotation: fleet.PruneDisabled}), cm("pruned", nil))
	deliver(2, cm("held", nil))

	var buf bytes.Buffer
	out := printers.NewYAMLStream(&buf)
	if err := writeMembers(out, h); err != nil {
		t.Fatal(err)
	}
	if err := out.Flush(); err != nil {
		t.Fatal(err)
	}
	got := buf.String()
	held, kept := strings.Index(got, "name: held"), strings.Index(got, "name: kept")
	if held < 0 || kept < held || strings.Contains(got, "name: pruned") ||
		strings.Count(got, "gitfleet.io/member-cluster: member1") != 2 {
		t.Errorf("-o yaml prints, want held then kept, both on member1, and not pruned:\n%s", got)
	}
}
