package web

import (
	"fmt"
	"testing"

	"github.com/chromedp/chromedp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	fleet "github.com/gitfleet/gitfleet/api/v1beta1"
)

// bigRun is a run of n clusters in three stages, in the middle of its
// second: the canary done, the first wave partly done with clusters in
// flight and one failed, the second wave pending.
func bigRun(n int) *fleet.UpdateRun {
	at := metav1.NewTime(epoch)
	started := metav1.Condition{Type: "Started", Status: "True", Reason: "ClusterUpdatingStarted", ObservedGeneration: 1, LastTransitionTime: at}
	succeeded := metav1.Condition{Type: "Succeeded", Status: "True", Reason: "ClusterUpdatingSucceeded", ObservedGeneration: 1, LastTransitionTime: at}
	failed := metav1.Condition{Type: "Succeeded", Status: "False", Reason: "ClusterUpdatingFailed", Message: "cluster updating failed", ObservedGeneration: 1, LastTransitionTime: at}
	run := &fleet.UpdateRun{ObjectMeta: metav1.ObjectMeta{Name: "big", Generation: 1, CreationTimestamp: at},
		Spec: fleet.UpdateRunSpec{PlacementName: "app", StagedUpdateStrategyName: "s", State: fleet.StateRun},
		Status: fleet.UpdateRunStatus{ResourceSnapshotIndexUsed: "0", Conditions: []metav1.Condition{
			{Type: "Initialized", Status: "True", Reason: "UpdateRunInitializedSuccessfully", ObservedGeneration: 1, LastTransitionTime: at},
			{Type: "Progressing", Status: "True", Reason: "UpdateRunProgressing", ObservedGeneration: 1, LastTransitionTime: at}}}}
	canary, wave := n/100, (n-n/100)/2
	sizes := []int{canary, wave, n - canary - wave}
	i := 0
	for s, size := range sizes {
		st := fleet.StageUpdatingStatus{StageName: fmt.Sprintf("wave%d", s)}
		for j := range size {
			c := fleet.ClusterUpdatingStatus{ClusterName: fmt.Sprintf("member%05d", i)}
			switch {
			case s == 0 || (s == 1 && j < size/2):
				c.Conditions = []metav1.Condition{started, succeeded}
			case s == 1 && j == size/2:
				c.Conditions = []metav1.Condition{started, failed}
			case s == 1 && j < size/2+20:
				c.Conditions = []metav1.Condition{started}
			}
			st.Clusters = append(st.Clusters, c)
			i++
		}
		run.Status.StagesStatus = append(run.Status.StagesStatus, st)
	}
	return run
}

// BenchmarkRunPage10000ClustersInChromium is the time headless Chromium
// takes to load and lay out the page of a 10,000-cluster run (the server's
// render included): the clusters that need a look as tiles, the others
// grouped by state.
func BenchmarkRunPage10000ClustersInChromium(b *testing.B) {
	r := newRepo(b)
	_, base := serve(b, r, false)
	r.write("status: big", bigRun(10000))
	ctx := tab(b)
	var tiles int
	for b.Loop() {
		do(b, ctx, chromedp.Navigate(base+"/runs/big"))
		tiles = eval[int](b, ctx, `document.body.offsetHeight && document.querySelectorAll("a.tile").length`)
	}
	if tiles == 0 {
		b.Fatal("no tiles on the page")
	}
	b.ReportMetric(float64(tiles), "tiles")
}
