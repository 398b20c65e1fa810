package simulate

import (
	"bytes"
	"context"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	fleet "github.com/gitfleet/gitfleet/api/v1beta1"
	"github.com/gitfleet/gitfleet/reconciler/hub"
)

// A run naming a strategy that is in Git but refused (never accepted)
// fails its initialization saying the strategy is invalid, with the
// strategy's first error and where it is, not that it does not exist.
func TestARunOfARefusedStrategySaysItIsInvalid(t *testing.T) {
	files := quickstart(t)
	files["strategy.yaml"] = bytes.Replace(files["strategy.yaml"], []byte("      sortingLabelKey: order\n"),
		[]byte("      sortingLabelKey: order\n      maxConcurrency: 0\n"), 1)
	res, err := Run(context.Background(), Options{Repo: newRepo(t, files)})
	if err != nil {
		t.Fatal(err)
	}
	run, err := res.Hub.GetUpdateRun(context.Background(), hub.Key{Name: "example-run"})
	if err != nil {
		t.Fatal(err)
	}
	want := "cannot continue the updateRun: failed to validate the updateRun: failed to process the request due to a client error: " +
		"strategy example-strategy is invalid: spec.stages[1].maxConcurrency: Invalid value: 0: maxConcurrency must be at least 1 (strategy.yaml:21)"
	var got *metav1.Condition
	for i, c := range run.Status.Conditions {
		if c.Type == string(fleet.StagedUpdateRunConditionInitialized) {
			got = &run.Status.Conditions[i]
		}
	}
	if got == nil || got.Status != metav1.ConditionFalse || got.Message != want {
		t.Errorf("Initialized condition %+v\nwant False with %q", got, want)
	}
}
