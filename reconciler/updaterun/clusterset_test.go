package updaterun

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	fleet "github.com/gitfleet/gitfleet/api/v1beta1"
)

// pickAll installs a PickAll placement over cluster-0..n-1 (group=prod,
// index=i) with a one-stage strategy selecting group=prod, maxConcurrency
// 1, no tasks: the run updates the clusters one by one in name order.
func (e *env) pickAll(n int) *env {
	for i := 0; i < n; i++ {
		e.member(fmt.Sprintf("cluster-%d", i), map[string]string{"group": "prod", "index": fmt.Sprint(i)})
	}
	e.placement(func(p *fleet.Placement) { p.Spec.Policy = nil })
	e.policySnapshot(1, true, nil, true)
	for i := 0; i < n; i++ {
		e.binding(fmt.Sprintf("cluster-%d", i), 1, fleet.BindingStateScheduled)
	}
	e.resourceSnapshot(0, true, "hash-0")
	e.strategy(fleet.UpdateStrategySpec{Stages: []fleet.StageConfig{{Name: "stage1", LabelSelector: selector("group", "prod")}}})
	return e
}

// join plays the scheduler picking a new cluster for the placement.
func (e *env) join(cluster string, labels map[string]string) {
	e.member(cluster, labels)
	e.binding(cluster, 1, fleet.BindingStateScheduled)
}

// leave plays the scheduler dropping a cluster from the placement.
func (e *env) leave(cluster string) {
	e.updateBinding(cluster, func(b *fleet.Binding) { b.Spec.State = fleet.BindingStateUnscheduled })
}

func freeze() *fleet.ClusterSetPolicy {
	return &fleet.ClusterSetPolicy{WhenChanged: fleet.ClusterSetChangeFreeze}
}

func clusterSkipped(c string) cond {
	return cond{fleet.ClusterUpdatingConditionSkipped, "True", fleet.ClusterLeftPlacementReason, fmt.Sprintf(ClusterLeftPlacementMessageFmt, c)}
}

// finish makes every started cluster available and runs passes until the
// run is finished (at most n).
func (e *env) finish(n int) *fleet.UpdateRun {
	e.t.Helper()
	for i := 0; i < n; i++ {
		run := e.get()
		if c := find(run.Status.Conditions, fleet.StagedUpdateRunConditionSucceeded); c != nil {
			return run
		}
		for _, s := range run.Status.StagesStatus {
			for _, cs := range s.Clusters {
				if isTrue(find(cs.Conditions, fleet.ClusterUpdatingConditionStarted), run.Generation) && e.bindingExists(cs.ClusterName) &&
					e.getBinding(cs.ClusterName).Spec.State == fleet.BindingStateBound {
					e.available(cs.ClusterName)
				}
			}
		}
		e.ok()
	}
	e.t.Fatalf("the run did not finish in %d passes: %s", n, condsString(e.get().Status.Conditions))
	return nil
}

// TestClusterJoiningMidRun: KubeFleet fails the run (#733); a frozen
// cluster set leaves the new cluster to the next run and lists it.
func TestClusterJoiningMidRun(t *testing.T) {
	for _, f := range families {
		for _, tc := range []struct {
			name       string
			clusterSet *fleet.ClusterSetPolicy
			wantFail   string
		}{
			{"KubeFleet fails the run", nil,
				"cannot continue the updateRun: the number of clusters in index `0` stage has changed, new: 4, existing: 3"},
			{"a frozen run goes on", freeze(), ""},
		} {
			t.Run(f.name+"/"+tc.name, func(t *testing.T) {
				e := newEnv(t, f.ns).pickAll(3)
				e.run.Spec.ClusterSet = tc.clusterSet
				e.create()
				e.ok()
				e.join("cluster-3", map[string]string{"group": "prod", "index": "3"})
				if tc.wantFail != "" {
					e.ok()
					wantConds(t, "run", e.get().Status.Conditions, runFailed(tc.wantFail)...)
					return
				}
				e.ok()
				if got := e.get().Status.PendingClusters; !slices.Equal(got, []string{"cluster-3"}) {
					t.Errorf("pendingClusters %v, want [cluster-3]", got)
				}
				run := e.finish(20)
				wantConds(t, "run", run.Status.Conditions, runSucceeded...)
				if got := clusterNames(run.Status.StagesStatus[0]); !slices.Equal(got, []string{"cluster-0", "cluster-1", "cluster-2"}) {
					t.Errorf("stage1 clusters %v", got)
				}
				if got := run.Status.PendingClusters; !slices.Equal(got, []string{"cluster-3"}) {
					t.Errorf("pendingClusters %v after the run, want [cluster-3]", got)
				}
				if b := e.getBinding("cluster-3"); b.Spec.State != fleet.BindingStateScheduled || b.Spec.ResourceSnapshotName != "" {
					t.Errorf("the pending cluster's binding was touched: %s %q", b.Spec.State, b.Spec.ResourceSnapshotName)
				}
			})
		}
	}
}

// TestClusterLeavingMidRun: KubeFleet fails the run (#733); a frozen
// cluster set skips the cluster that left, whether it was waiting or in
// flight, frees its slot, and does not delete its binding (the next run's
// deletion stage does).
func TestClusterLeavingMidRun(t *testing.T) {
	for _, f := range families {
		for _, tc := range []struct {
			name       string
			clusterSet *fleet.ClusterSetPolicy
			leaving    string
			wantFail   string
		}{
			{"KubeFleet fails the run", nil, "cluster-2",
				"cannot continue the updateRun: the number of clusters in index `0` stage has changed, new: 2, existing: 3"},
			{"a frozen run skips a waiting cluster", freeze(), "cluster-2", ""},
			{"a frozen run skips a cluster in flight", freeze(), "cluster-0", ""},
		} {
			t.Run(f.name+"/"+tc.name, func(t *testing.T) {
				e := newEnv(t, f.ns).pickAll(3)
				e.run.Spec.ClusterSet = tc.clusterSet
				e.create()
				e.ok() // cluster-0 starts
				e.leave(tc.leaving)
				e.ok()
				if tc.wantFail != "" {
					wantConds(t, "run", e.get().Status.Conditions, runFailed(tc.wantFail)...)
					return
				}
				run := e.get()
				wantConds(t, "run", run.Status.Conditions, initOK, runProgressing)
				s1 := run.Status.StagesStatus[0]
				for _, cs := range s1.Clusters {
					if cs.ClusterName != tc.leaving {
						continue
					}
					if tc.leaving == "cluster-0" {
						wantConds(t, tc.leaving, cs.Conditions, clusterStarted, clusterSkipped(tc.leaving))
					} else {
						wantConds(t, tc.leaving, cs.Conditions, clusterSkipped(tc.leaving))
					}
				}
				if tc.leaving == "cluster-0" && !isTrue(find(s1.Clusters[1].Conditions, fleet.ClusterUpdatingConditionStarted), run.Generation) {
					t.Errorf("the skipped cluster's slot was not freed: cluster-1 %s", condsString(s1.Clusters[1].Conditions))
				}
				run = e.finish(20)
				wantConds(t, "run", run.Status.Conditions, runSucceeded...)
				wantConds(t, "stage1", run.Status.StagesStatus[0].Conditions, stageDone...)
				if len(run.Status.PendingClusters) != 0 {
					t.Errorf("pendingClusters %v", run.Status.PendingClusters)
				}
				if !e.bindingExists(tc.leaving) {
					t.Errorf("the run deleted the binding of %s, which left after it was initialized", tc.leaving)
				}
				if got := len(run.Status.DeletionStageStatus.Clusters); got != 0 {
					t.Errorf("deletion stage has %d clusters", got)
				}
			})
		}
	}
}

// TestFrozenRunIgnoresRelabelling: a relabelled member (another stage, a
// sorting label gone) fails KubeFleet's run; a frozen run keeps the order
// it was initialized with.
func TestFrozenRunIgnoresRelabelling(t *testing.T) {
	e := newEnv(t, "").pickAll(3)
	e.strategy(fleet.UpdateStrategySpec{Stages: []fleet.StageConfig{
		{Name: "stage1", LabelSelector: selector("group", "prod"), SortingLabelKey: strptr("index")}}})
	e.run.Spec.ClusterSet = freeze()
	e.create()
	e.ok()
	e.member("cluster-1", map[string]string{"group": "canary"})
	run := e.finish(20)
	wantConds(t, "run", run.Status.Conditions, runSucceeded...)
	if got := clusterNames(run.Status.StagesStatus[0]); !slices.Equal(got, []string{"cluster-0", "cluster-1", "cluster-2"}) {
		t.Errorf("stage1 clusters %v", got)
	}
}

// TestUnmatchedClusterPolicies: picked clusters no stage selects fail the
// initialization (KubeFleet's, #638/#512), are left out (Ignore), or are
// left out up to maxUnmatched (Allow, a percentage rounded up); the status
// lists all of them, the condition up to 10.
func TestUnmatchedClusterPolicies(t *testing.T) {
	var unmatched []string
	for i := 3; i < 15; i++ {
		unmatched = append(unmatched, fmt.Sprintf("cluster-%d", i))
	}
	slices.Sort(unmatched)
	shown := strings.Join(unmatched[:10], ", ")
	failMsg := "cannot continue the updateRun: failed to validate the updateRun: failed to process the request due to a client error: " +
		"some clusters are not placed in any stage, total 12, showing up to 10: " + shown
	for _, tc := range []struct {
		name       string
		clusterSet *fleet.ClusterSetPolicy
		wantFail   string
	}{
		{"KubeFleet fails", nil, failMsg},
		{"Fail fails", &fleet.ClusterSetPolicy{Unmatched: fleet.UnmatchedClustersFail}, failMsg},
		{"Ignore leaves them out", &fleet.ClusterSetPolicy{Unmatched: fleet.UnmatchedClustersIgnore}, ""},
		{"Allow 12 leaves them out", &fleet.ClusterSetPolicy{Unmatched: fleet.UnmatchedClustersAllow, MaxUnmatched: intOrStr("12")}, ""},
		{"Allow 80% (ceil 12) leaves them out", &fleet.ClusterSetPolicy{Unmatched: fleet.UnmatchedClustersAllow, MaxUnmatched: intOrStr("80%")}, ""},
		{"Allow 11 fails", &fleet.ClusterSetPolicy{Unmatched: fleet.UnmatchedClustersAllow, MaxUnmatched: intOrStr("11")},
			failMsg + ", more than clusterSet.maxUnmatched allows (11: 11)"},
		{"Allow 73% (ceil 11) fails", &fleet.ClusterSetPolicy{Unmatched: fleet.UnmatchedClustersAllow, MaxUnmatched: intOrStr("73%")},
			failMsg + ", more than clusterSet.maxUnmatched allows (73%: 11)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t, "").pickAll(15)
			e.strategy(fleet.UpdateStrategySpec{Stages: []fleet.StageConfig{
				{Name: "stage1", LabelSelector: &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{
					{Key: "index", Operator: metav1.LabelSelectorOpIn, Values: []string{"0", "1", "2"}}}}}}})
			e.run.Spec.ClusterSet = tc.clusterSet
			e.create()
			e.ok()
			run := e.get()
			if got := run.Status.UnmatchedClusters; !slices.Equal(got, unmatched) {
				t.Errorf("unmatchedClusters %v, want all 12", got)
			}
			if tc.wantFail != "" {
				wantConds(t, "run", run.Status.Conditions, initFailed(tc.wantFail))
				return
			}
			run = e.finish(20)
			wantConds(t, "run", run.Status.Conditions, runSucceeded...)
			if got := clusterNames(run.Status.StagesStatus[0]); !slices.Equal(got, []string{"cluster-0", "cluster-1", "cluster-2"}) {
				t.Errorf("stage1 clusters %v", got)
			}
			for _, c := range unmatched {
				if b := e.getBinding(c); b.Spec.State != fleet.BindingStateScheduled {
					t.Errorf("unmatched %s was bound", c)
				}
			}
		})
	}
}

// TestFrozenRunDeletesOnlyWhatItListed: the deletion stage of a frozen run
// deletes the bindings it listed at initialization, and leaves the binding
// of a cluster that left during the run to the next run.
func TestFrozenRunDeletesOnlyWhatItListed(t *testing.T) {
	for _, f := range families {
		t.Run(f.name, func(t *testing.T) {
			e := newEnv(t, f.ns).pickAll(3)
			e.member("gone-0", map[string]string{"group": "prod"})
			e.binding("gone-0", 1, fleet.BindingStateUnscheduled)
			e.run.Spec.ClusterSet = freeze()
			e.create()
			e.ok()
			if got := clusterNames(*e.get().Status.DeletionStageStatus); !slices.Equal(got, []string{"gone-0"}) {
				t.Fatalf("deletion stage %v", got)
			}
			e.leave("cluster-2")
			run := e.finish(20)
			wantConds(t, "run", run.Status.Conditions, runSucceeded...)
			if e.bindingExists("gone-0") {
				t.Error("the binding the deletion stage listed is still there")
			}
			if !e.bindingExists("cluster-2") {
				t.Error("the run deleted the binding of cluster-2, which left after it was initialized")
			}
		})
	}
}

// TestFrozenRunDoesNotDeleteAClusterPickedAgain: a cluster of the deletion
// stage that the placement picks again before the stage runs is skipped
// there, not reported deleted, and waits for the next run.
func TestFrozenRunDoesNotDeleteAClusterPickedAgain(t *testing.T) {
	e := newEnv(t, "").pickAll(2)
	e.member("gone-0", map[string]string{"group": "prod"})
	e.binding("gone-0", 1, fleet.BindingStateUnscheduled)
	e.run.Spec.ClusterSet = freeze()
	e.create()
	e.ok()
	e.updateBinding("gone-0", func(b *fleet.Binding) { b.Spec.State = fleet.BindingStateScheduled })
	run := e.finish(20)
	wantConds(t, "run", run.Status.Conditions, runSucceeded...)
	if !e.bindingExists("gone-0") {
		t.Fatal("the run deleted the binding of gone-0, picked again")
	}
	wantConds(t, "gone-0", run.Status.DeletionStageStatus.Clusters[0].Conditions,
		cond{fleet.ClusterUpdatingConditionSkipped, "True", fleet.ClusterJoinedPlacementReason, fmt.Sprintf(ClusterRejoinedMessageFmt, "gone-0")})
	if got := run.Status.PendingClusters; !slices.Equal(got, []string{"gone-0"}) {
		t.Errorf("pendingClusters %v, want [gone-0]", got)
	}
}
