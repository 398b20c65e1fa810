package member

import (
	"errors"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	fleet "github.com/gitfleet/gitfleet/api/v1beta1"
	"github.com/gitfleet/gitfleet/reconciler/member/override"
)

// TestAFailedOverrideReadsAsKubeFleetsWorkGenerator: Overridden=False
// carries KubeFleet's reason and message, with the snapshot, the resource
// and the cause of the failure.
func TestAFailedOverrideReadsAsKubeFleetsWorkGenerator(t *testing.T) {
	err := &override.Error{SnapshotKind: fleet.KindResourceOverrideSnapshot, SnapshotName: "settings-0",
		Target: `ConfigMap "settings" in namespace "app"`, Err: errors.New("boom")}
	c := NotOverridden(&fleet.Binding{ObjectMeta: metav1.ObjectMeta{Generation: 3}}, err.Error())
	want := `Failed to apply the override rules on the resources: ResourceOverrideSnapshot "settings-0" failed to apply on ConfigMap "settings" in namespace "app": boom`
	if c.Type != fleet.ResourceBindingOverridden || c.Status != metav1.ConditionFalse || c.Reason != "OverriddenFailed" ||
		c.Message != want || c.ObservedGeneration != 3 {
		t.Errorf("got %+v\nwant Overridden False OverriddenFailed %q at generation 3", c, want)
	}
}
