package updaterun

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	fleet "github.com/gitfleet/gitfleet/api/v1beta1"
)

const retryName = "retry-run"

// createRetry applies a run retrying runName, with the same placement and
// strategy, in state Run.
func (e *env) createRetry(mutate func(*fleet.UpdateRun)) {
	r := &fleet.UpdateRun{
		ObjectMeta: metav1.ObjectMeta{Name: retryName, Namespace: e.ns},
		Spec: fleet.UpdateRunSpec{PlacementName: placementName, StagedUpdateStrategyName: strategyName,
			State: fleet.StateRun, RetryOf: runName},
	}
	if mutate != nil {
		mutate(r)
	}
	e.h.ApplyUpdateRun(r)
}

// onRetry points the env's passes and reads at the retry.
func (e *env) onRetry() *env {
	e.run = &fleet.UpdateRun{ObjectMeta: metav1.ObjectMeta{Name: retryName, Namespace: e.ns}}
	return e
}

// failOnCluster1 runs the original run over cluster-0..2 of pickAll(3):
// cluster-0 succeeds, cluster-1 is taken over by another writer (the run
// fails with it), cluster-2 is never reached.
func (e *env) failOnCluster1() {
	e.t.Helper()
	e.create()
	e.ok() // cluster-0 starts
	e.available("cluster-0")
	e.ok() // cluster-0 succeeds, cluster-1 starts
	e.updateBinding("cluster-1", func(b *fleet.Binding) { b.Spec.State = fleet.BindingStateScheduled })
	e.ok()
	run := e.get()
	if c := find(run.Status.Conditions, fleet.StagedUpdateRunConditionSucceeded); !isFalse(c, run.Generation) {
		e.t.Fatalf("the original run did not fail: %s", condsString(run.Status.Conditions))
	}
}

// TestRetryRollsOutTheSameSnapshotToWhatDidNotSucceed: a retry covers
// exactly the failed and never-reached clusters, with the retried run's
// snapshot and strategy; what succeeded is not touched.
func TestRetryRollsOutTheSameSnapshotToWhatDidNotSucceed(t *testing.T) {
	for _, f := range families {
		t.Run(f.name, func(t *testing.T) {
			e := newEnv(t, f.ns).pickAll(3)
			e.failOnCluster1()
			if got := RetriedClusters(e.get()); !slices.Equal(got, []string{"cluster-1", "cluster-2"}) {
				t.Fatalf("RetriedClusters %v", got)
			}
			// The strategy changes after the run: the retry keeps the
			// retried run's.
			e.strategy(fleet.UpdateStrategySpec{Stages: []fleet.StageConfig{{Name: "other", LabelSelector: selector("group", "prod"),
				BeforeStageTasks: []fleet.StageTask{approval()}}}})
			e.createRetry(nil)
			e.onRetry()
			run := e.finish(20)
			wantConds(t, "retry", run.Status.Conditions, runSucceeded...)
			if got := clusterNames(run.Status.StagesStatus[0]); run.Status.StagesStatus[0].StageName != "stage1" ||
				!slices.Equal(got, []string{"cluster-1", "cluster-2"}) {
				t.Errorf("retry stage %s clusters %v, want stage1 [cluster-1 cluster-2]", run.Status.StagesStatus[0].StageName, got)
			}
			if run.Status.ResourceSnapshotIndexUsed != "0" {
				t.Errorf("resourceSnapshotIndexUsed %q", run.Status.ResourceSnapshotIndexUsed)
			}
			// The binding's RolloutStarted says which run started it.
			for c, by := range map[string]string{"cluster-0": runName, "cluster-1": retryName, "cluster-2": retryName} {
				rs := find(e.getBinding(c).Status.Conditions, fleet.ResourceBindingRolloutStarted)
				if want := fmt.Sprintf(RolloutStartedMessageFmt, "0", by); rs == nil || rs.Message != want {
					t.Errorf("%s: RolloutStarted %v, want %q", c, rs, want)
				}
			}
		})
	}
}

// TestRetryOfSkippedClusters: a cluster a frozen run skipped because it
// left is retried once it is back.
func TestRetryOfSkippedClusters(t *testing.T) {
	e := newEnv(t, "").pickAll(3)
	e.run.Spec.ClusterSet = freeze()
	e.create()
	e.ok()
	e.leave("cluster-2")
	if run := e.finish(20); !slices.Equal(RetriedClusters(run), []string{"cluster-2"}) {
		t.Fatalf("RetriedClusters %v", RetriedClusters(run))
	}
	e.updateBinding("cluster-2", func(b *fleet.Binding) { b.Spec.State = fleet.BindingStateScheduled })
	e.createRetry(nil)
	e.onRetry()
	run := e.finish(20)
	wantConds(t, "retry", run.Status.Conditions, runSucceeded...)
	if got := clusterNames(run.Status.StagesStatus[0]); !slices.Equal(got, []string{"cluster-2"}) {
		t.Errorf("retry clusters %v", got)
	}
	if b := e.getBinding("cluster-2"); b.Spec.State != fleet.BindingStateBound || b.Spec.ResourceSnapshotName == "" {
		t.Errorf("cluster-2 not rolled out: %s %q", b.Spec.State, b.Spec.ResourceSnapshotName)
	}
}

// TestRetryRefused: each reason a retry is refused fails its
// initialization with a message naming why.
func TestRetryRefused(t *testing.T) {
	prefix := "cannot continue the updateRun: failed to validate the updateRun: failed to process the request due to a client error: "
	for _, tc := range []struct {
		name   string
		before func(e *env)
		mutate func(r *fleet.UpdateRun)
		want   string
	}{
		{"no such run", func(e *env) { e.failOnCluster1() }, func(r *fleet.UpdateRun) { r.Spec.RetryOf = "nope" },
			fmt.Sprintf(RetryNotFoundFmt, "nope")},
		{"still running", func(e *env) { e.create(); e.ok() }, nil,
			fmt.Sprintf(RetryNotFinishedFmt, runName)},
		{"never initialized", func(e *env) { e.run.Spec.ResourceSnapshotIndex = "7"; e.create(); e.ok() }, nil,
			fmt.Sprintf(RetryNotInitializedFmt, runName)},
		{"everything succeeded", func(e *env) { e.create(); e.finish(20) }, nil,
			fmt.Sprintf(RetryNothingFmt, runName)},
		{"another strategy", func(e *env) { e.failOnCluster1() }, func(r *fleet.UpdateRun) { r.Spec.StagedUpdateStrategyName = "other" },
			fmt.Sprintf(RetryOtherStrategyFmt, runName, strategyName, "other")},
		{"another snapshot index", func(e *env) { e.failOnCluster1() }, func(r *fleet.UpdateRun) { r.Spec.ResourceSnapshotIndex = "1" },
			fmt.Sprintf(RetryOtherIndexFmt, "1", runName, "0")},
		{"a newer snapshot", func(e *env) {
			e.failOnCluster1()
			all, err := e.h.ListResourceSnapshots(e.ctx, e.pkey())
			if err != nil || len(all) != 1 {
				e.t.Fatal(all, err)
			}
			s := all[0]
			s.Labels[fleet.IsLatestSnapshotLabel] = "false"
			if err := e.h.UpdateResourceSnapshot(e.ctx, s); err != nil {
				e.t.Fatal(err)
			}
			e.resourceSnapshot(1, true, "hash-1")
		}, nil, fmt.Sprintf(RetrySnapshotOutdatedFmt, runName, "0", "/"+placementName, "1")},
		{"another apply strategy", func(e *env) {
			e.failOnCluster1()
			e.placement(func(p *fleet.Placement) {
				p.Spec.Policy = nil
				p.Spec.Strategy.ApplyStrategy = &fleet.ApplyStrategy{Type: fleet.ApplyStrategyTypeServerSideApply}
			})
		}, nil, "~the applyStrategy of placement `/" + placementName + "` changed since the retried updateRun `" + runName + "`"},
		{"other overrides", func(e *env) {
			e.selectResources()
			e.failOnCluster1()
			prod := fleet.OverrideRule{ClusterSelector: &fleet.ClusterSelector{ClusterSelectorTerms: []fleet.ClusterSelectorTerm{
				{LabelSelector: selector("group", "prod")}}}, JSONPatchOverrides: eastusRule().JSONPatchOverrides}
			e.clusterResourceOverride("test-cro", 0, true, fleet.ClusterResourceOverrideSpec{ClusterResourceSelectors: appNamespace,
				Policy: &fleet.OverridePolicy{OverrideRules: []fleet.OverrideRule{prod}}})
		}, nil, fmt.Sprintf(RetryOverridesFmt, "cluster-1", runName)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t, "").pickAll(3)
			tc.before(e)
			e.createRetry(tc.mutate)
			e.onRetry()
			e.ok()
			run := e.get()
			want := prefix + tc.want
			if strings.HasPrefix(tc.want, "~") {
				want = tc.want
			}
			wantConds(t, "retry", run.Status.Conditions, initFailed(want))
		})
	}
}
