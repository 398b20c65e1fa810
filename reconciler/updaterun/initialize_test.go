package updaterun

import (
	"fmt"
	"slices"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	fleet "github.com/gitfleet/gitfleet/api/v1beta1"
	"github.com/gitfleet/gitfleet/reconciler/hub"
	"github.com/gitfleet/gitfleet/reconciler/resourcesnapshot"
)

const validationPrefix = "cannot continue the updateRun: failed to validate the updateRun: "

func userMsg(s string) string {
	return validationPrefix + "failed to process the request due to a client error: " + s
}
func unexpectedMsg2(s string) string {
	return validationPrefix + "unexpected behavior which cannot be handled by the controller: " + s
}

// k prints a key of the env's family the way KubeFleet's messages do.
func (e *env) k(name string) string { return e.ns + "/" + name }

func (e *env) deleteBindings(clusters ...string) {
	for _, c := range clusters {
		if err := e.h.DeleteBinding(e.ctx, hub.Key{Namespace: e.ns, Name: bindingName(c)}); err != nil {
			e.t.Fatal(err)
		}
	}
}

func targetClusters() []string {
	var out []string
	for i := 0; i < 10; i++ {
		out = append(out, fmt.Sprintf("cluster-%d", i))
	}
	return out
}

func (e *env) deleteResourceSnapshots() {
	all, _ := e.h.ListResourceSnapshots(e.ctx, e.pkey())
	for _, s := range all {
		if err := e.h.DeleteResourceSnapshot(e.ctx, hub.Key{Namespace: s.Namespace, Name: s.Name}); err != nil {
			e.t.Fatal(err)
		}
	}
}

// withSelection gives the hub one workload resource every placement selects.
func (e *env) withSelection(data string) []*unstructured.Unstructured {
	cm := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "v1", "kind": "ConfigMap",
		"metadata": map[string]any{"name": "app", "namespace": "app"},
		"data":     map[string]any{"key": data},
	}}
	res := []*unstructured.Unstructured{cm}
	e.h.SetResources(res)
	e.h.SetSelector(func(_ *fleet.Placement, r []*unstructured.Unstructured) ([]*unstructured.Unstructured, error) {
		return r, nil
	})
	return res
}

func snapshotNames(e *env) []string {
	all, _ := e.h.ListResourceSnapshots(e.ctx, e.pkey())
	var out []string
	for _, s := range all {
		out = append(out, s.Name+"="+s.Labels[fleet.IsLatestSnapshotLabel])
	}
	slices.Sort(out)
	return out
}

// TestInitialization is spec §9.2: every failure records only
// Initialized=False with the full message (never retried); what was
// derived before the failing step is persisted.
func TestInitialization(t *testing.T) {
	tests := []struct {
		name        string
		setup       func(e *env)
		wantMsg     func(e *env) string // "" = initialization succeeds
		failureType string
		check       func(t *testing.T, e *env, run *fleet.UpdateRun)
	}{
		{
			name:        "1 placement missing",
			setup:       func(e *env) { e.h.DeletePlacement(e.pkey()) },
			wantMsg:     func(e *env) string { return userMsg("parent placement not found") },
			failureType: FailureTypeUserError,
		},
		{
			name: "2 placement not External",
			setup: func(e *env) {
				e.placement(func(p *fleet.Placement) { p.Spec.Strategy.Type = fleet.RollingUpdateRolloutStrategyType })
			},
			wantMsg: func(e *env) string {
				return userMsg("parent placement does not have an external rollout strategy, current strategy: RollingUpdate")
			},
			failureType: FailureTypeUserError,
		},
		{
			name: "2b placement without strategy type defaults to RollingUpdate",
			setup: func(e *env) {
				e.placement(func(p *fleet.Placement) { p.Spec.Strategy.Type = "" })
			},
			wantMsg: func(e *env) string {
				return userMsg("parent placement does not have an external rollout strategy, current strategy: RollingUpdate")
			},
			failureType: FailureTypeUserError,
		},
		{
			name: "3 apply strategy copied and defaulted",
			setup: func(e *env) {
				e.placement(func(p *fleet.Placement) {
					p.Spec.Strategy.ApplyStrategy = &fleet.ApplyStrategy{Type: fleet.ApplyStrategyTypeServerSideApply, WhenToApply: fleet.WhenToApplyTypeIfNotDrifted}
				})
			},
			check: func(t *testing.T, e *env, run *fleet.UpdateRun) {
				want := fleet.DefaultApplyStrategy(&fleet.ApplyStrategy{Type: fleet.ApplyStrategyTypeServerSideApply, WhenToApply: fleet.WhenToApplyTypeIfNotDrifted})
				if !deepEqual(run.Status.AppliedStrategy, want) {
					t.Errorf("applied strategy %+v, want %+v", run.Status.AppliedStrategy, want)
				}
			},
		},
		{
			name: "4 no latest policy snapshot",
			setup: func(e *env) {
				e.updatePolicySnapshot(1, func(s *fleet.PolicySnapshot) { s.Labels[fleet.IsLatestSnapshotLabel] = "false" })
			},
			wantMsg: func(e *env) string {
				return validationPrefix + "no latest policy snapshot found for placement " + e.k(placementName)
			},
			failureType: FailureTypeInternalError,
		},
		{
			name: "5 two latest policy snapshots",
			setup: func(e *env) {
				e.updatePolicySnapshot(0, func(s *fleet.PolicySnapshot) { s.Labels[fleet.IsLatestSnapshotLabel] = "true" })
			},
			wantMsg: func(e *env) string {
				return unexpectedMsg2("multiple active policy snapshots found for placement " + e.k(placementName) + ": got 2, want 1")
			},
			failureType: FailureTypeInternalError,
		},
		{
			name: "6 policy snapshot without index label",
			setup: func(e *env) {
				e.updatePolicySnapshot(1, func(s *fleet.PolicySnapshot) { delete(s.Labels, fleet.PolicyIndexLabel) })
			},
			wantMsg: func(e *env) string {
				return unexpectedMsg2("policy snapshot `" + e.k(placementName+"-1") + "` does not have a policy index label")
			},
		},
		{
			name:  "7 PickN without cluster count annotation",
			setup: func(e *env) { e.updatePolicySnapshot(1, func(s *fleet.PolicySnapshot) { s.Annotations = nil }) },
			wantMsg: func(e *env) string {
				return "cannot continue the updateRun: failed to validate the updateRun, unexpected behavior which cannot be handled by the controller: " +
					"cannot find annotation kubernetes-fleet.io/number-of-clusters: the policy snapshot `" + e.k(placementName+"-1") + "` doesn't have valid cluster count annotation"
			},
			failureType: FailureTypeInternalError,
		},
		{
			name: "8 policy snapshot not fully scheduled",
			setup: func(e *env) {
				e.updatePolicySnapshot(1, func(s *fleet.PolicySnapshot) { s.Status.Conditions[0].Status = metav1.ConditionFalse })
			},
			wantMsg: func(e *env) string {
				return validationPrefix + "policy snapshot `" + placementName + "-1` not fully scheduled yet"
			},
			check: func(t *testing.T, e *env, run *fleet.UpdateRun) {
				if run.Status.PolicySnapshotIndexUsed != "1" || run.Status.PolicyObservedClusterCount != 10 {
					t.Errorf("policy %q count %d persisted", run.Status.PolicySnapshotIndexUsed, run.Status.PolicyObservedClusterCount)
				}
			},
		},
		{
			name: "8b Scheduled at an old generation does not count",
			setup: func(e *env) {
				e.updatePolicySnapshot(1, func(s *fleet.PolicySnapshot) { s.Status.Conditions[0].ObservedGeneration = 0 })
			},
			wantMsg: func(e *env) string {
				return validationPrefix + "policy snapshot `" + placementName + "-1` not fully scheduled yet"
			},
		},
		{
			name: "9 PickN records index and count",
			check: func(t *testing.T, e *env, run *fleet.UpdateRun) {
				if run.Status.PolicySnapshotIndexUsed != "1" || run.Status.PolicyObservedClusterCount != 10 {
					t.Errorf("policy %q count %d", run.Status.PolicySnapshotIndexUsed, run.Status.PolicyObservedClusterCount)
				}
			},
		},
		{
			name: "10 PickFixed counts its cluster names",
			setup: func(e *env) {
				e.updatePolicySnapshot(1, func(s *fleet.PolicySnapshot) {
					s.Spec.Policy = &fleet.PlacementPolicy{PlacementType: fleet.PickFixedPlacementType, ClusterNames: []string{"cluster-0", "cluster-1"}}
				})
			},
			wantMsg: func(e *env) string {
				return unexpectedMsg2("the number of selected bindings 10 is not equal to the observed cluster count 2")
			},
			check: func(t *testing.T, e *env, run *fleet.UpdateRun) {
				if run.Status.PolicyObservedClusterCount != 2 {
					t.Errorf("count %d", run.Status.PolicyObservedClusterCount)
				}
			},
		},
		{
			name: "11 PickAll count -1 persisted when init fails before the bindings",
			setup: func(e *env) {
				e.updatePolicySnapshot(1, func(s *fleet.PolicySnapshot) {
					s.Spec.Policy = nil
					s.Status.Conditions[0].Status = metav1.ConditionFalse
				})
			},
			wantMsg: func(e *env) string {
				return validationPrefix + "policy snapshot `" + placementName + "-1` not fully scheduled yet"
			},
			check: func(t *testing.T, e *env, run *fleet.UpdateRun) {
				if run.Status.PolicyObservedClusterCount != -1 {
					t.Errorf("count %d", run.Status.PolicyObservedClusterCount)
				}
			},
		},
		{
			name: "12 no bindings",
			setup: func(e *env) {
				e.deleteBindings(append(targetClusters(), deletionClusters...)...)
			},
			wantMsg: func(e *env) string {
				return validationPrefix + "no scheduled or to-be-deleted bindings found for the latest policy snapshot " + e.k(placementName+"-1")
			},
		},
		{
			name:  "13 fewer selected bindings than the PickN count",
			setup: func(e *env) { e.deleteBindings(targetClusters()[1:]...) },
			wantMsg: func(e *env) string {
				return unexpectedMsg2("the number of selected bindings 1 is not equal to the observed cluster count 10")
			},
		},
		{
			name:  "14 only unscheduled bindings on the latest snapshot",
			setup: func(e *env) { e.deleteBindings(append(targetClusters(), "unscheduled-cluster-0")...) },
			wantMsg: func(e *env) string {
				return unexpectedMsg2("the number of selected bindings 0 is not equal to the observed cluster count 10")
			},
		},
		{
			name: "16 PickAll with only to-be-deleted bindings gets to the strategy",
			setup: func(e *env) {
				e.updatePolicySnapshot(1, func(s *fleet.PolicySnapshot) { s.Spec.Policy = nil })
				e.deleteBindings(targetClusters()...)
				e.h.DeleteUpdateStrategy(hub.Key{Namespace: e.ns, Name: strategyName})
			},
			wantMsg: func(e *env) string {
				return userMsg("referenced updateStrategy not found: `" + e.k(strategyName) + "`")
			},
			failureType: FailureTypeUserError,
			check: func(t *testing.T, e *env, run *fleet.UpdateRun) {
				if run.Status.PolicyObservedClusterCount != 0 {
					t.Errorf("count %d", run.Status.PolicyObservedClusterCount)
				}
			},
		},
		{
			name: "17 PickAll counts the selected bindings",
			setup: func(e *env) {
				e.updatePolicySnapshot(1, func(s *fleet.PolicySnapshot) {
					s.Spec.Policy = &fleet.PlacementPolicy{PlacementType: fleet.PickAllPlacementType}
				})
				e.deleteBindings(targetClusters()[1:]...)
			},
			check: func(t *testing.T, e *env, run *fleet.UpdateRun) {
				if run.Status.PolicyObservedClusterCount != 1 {
					t.Errorf("count %d", run.Status.PolicyObservedClusterCount)
				}
				if got := clusterNames(run.Status.StagesStatus[1]); !slices.Equal(got, []string{"cluster-0"}) {
					t.Errorf("stage2 %v", got)
				}
			},
		},
		{
			name:  "18 strategy missing",
			setup: func(e *env) { e.h.DeleteUpdateStrategy(hub.Key{Namespace: e.ns, Name: strategyName}) },
			wantMsg: func(e *env) string {
				return userMsg("referenced updateStrategy not found: `" + e.k(strategyName) + "`")
			},
			failureType: FailureTypeUserError,
		},
		{
			name: "18 strategy refused in Git: invalid, not missing",
			setup: func(e *env) {
				e.h.DeleteUpdateStrategy(hub.Key{Namespace: e.ns, Name: strategyName})
				e.r.RefusedStrategy = func(k hub.Key) string {
					if k != (hub.Key{Namespace: e.ns, Name: strategyName}) {
						return ""
					}
					return "spec.stages[1].maxConcurrency: Invalid value: 0: maxConcurrency must be at least 1 (strategy.yaml:11)"
				}
			},
			wantMsg: func(e *env) string {
				name := strategyName
				if e.ns != "" {
					name = e.ns + "/" + name
				}
				return userMsg("strategy " + name + " is invalid: spec.stages[1].maxConcurrency: Invalid value: 0: maxConcurrency must be at least 1 (strategy.yaml:11)")
			},
			failureType: FailureTypeUserError,
		},
		{
			name: "19 two TimedWait after-stage tasks",
			setup: func(e *env) {
				s := twoStages()
				s.Stages[0].AfterStageTasks = []fleet.StageTask{timedWait(time.Second), timedWait(time.Second)}
				e.strategy(s)
			},
			wantMsg: func(e *env) string {
				return userMsg("the after stage tasks are invalid, updateStrategy: `" + e.k(strategyName) + "`, stage: stage1, err: afterStageTasks cannot have two tasks of the same type: TimedWait")
			},
			failureType: FailureTypeUserError,
		},
		{
			name: "20 TimedWait of zero",
			setup: func(e *env) {
				s := twoStages()
				s.Stages[0].AfterStageTasks = []fleet.StageTask{timedWait(0)}
				e.strategy(s)
			},
			wantMsg: func(e *env) string {
				return userMsg("the after stage tasks are invalid, updateStrategy: `" + e.k(strategyName) + "`, stage: stage1, err: task 0 of type TimedWait has wait duration <= 0")
			},
		},
		{
			name: "20b TimedWait before a stage",
			setup: func(e *env) {
				s := twoStages()
				s.Stages[1].BeforeStageTasks = []fleet.StageTask{timedWait(time.Second)}
				e.strategy(s)
			},
			wantMsg: func(e *env) string {
				return userMsg("the before stage tasks are invalid, updateStrategy: `" + e.k(strategyName) + "`, stage: stage2, err: task 0 of type TimedWait is not allowed in beforeStageTasks, allowed type: Approval")
			},
		},
		{
			name: "20c TimedWait before the deletion stage",
			setup: func(e *env) {
				s := twoStages()
				s.DeleteStage = &fleet.DeleteStageConfig{BeforeStageTasks: []fleet.StageTask{timedWait(time.Second)}}
				e.strategy(s)
			},
			wantMsg: func(e *env) string {
				return userMsg("the before stage tasks are invalid, updateStrategy: `" + e.k(strategyName) + "`, stage: kubernetes-fleet.io/deleteStage, err: task 0 of type TimedWait is not allowed in beforeStageTasks, allowed type: Approval")
			},
		},
		{
			name: "21 sorting label missing on the clusters",
			setup: func(e *env) {
				s := twoStages()
				s.Stages[0].SortingLabelKey = strptr("not-exist-label")
				e.strategy(s)
			},
			wantMsg: func(e *env) string {
				return userMsg("the sorting label `not-exist-label:` on cluster `cluster-1` is not valid: strconv.Atoi: parsing \"\": invalid syntax")
			},
		},
		{
			name: "22 overlapping stages",
			setup: func(e *env) {
				s := twoStages()
				s.Stages[1].LabelSelector = selector("group", "prod")
				e.strategy(s)
			},
			wantMsg: func(e *env) string { return userMsg("cluster `cluster-1` appears in more than one stages") },
		},
		{
			name: "23 clusters in no stage",
			setup: func(e *env) {
				s := twoStages()
				s.Stages = s.Stages[:1]
				e.strategy(s)
			},
			wantMsg: func(e *env) string {
				return userMsg("some clusters are not placed in any stage, total 5, showing up to 10: cluster-0, cluster-2, cluster-4, cluster-6, cluster-8")
			},
		},
		{
			name: "24 empty selector takes all, nil selector none",
			setup: func(e *env) {
				s := twoStages()
				s.Stages[0].LabelSelector = &metav1.LabelSelector{}
				s.Stages[1].LabelSelector = nil
				e.strategy(s)
				e.run.Spec.ResourceSnapshotIndex = "5"
			},
			wantMsg: func(e *env) string {
				return userMsg("no resourceSnapshots with index `5` found for placement `" + e.k(placementName) + "`")
			},
			check: func(t *testing.T, e *env, run *fleet.UpdateRun) {
				want := []string{"cluster-9", "cluster-8", "cluster-7", "cluster-6", "cluster-5", "cluster-4", "cluster-3", "cluster-2", "cluster-1", "cluster-0"}
				if got := clusterNames(run.Status.StagesStatus[0]); !slices.Equal(got, want) {
					t.Errorf("stage1 %v", got)
				}
				if got := run.Status.StagesStatus[1].Clusters; got == nil || len(got) != 0 {
					t.Errorf("stage2 %v", got)
				}
			},
		},
		{
			name:  "25 stages persisted when the snapshot is missing",
			setup: func(e *env) { e.run.Spec.ResourceSnapshotIndex = "5" },
			wantMsg: func(e *env) string {
				return userMsg("no resourceSnapshots with index `5` found for placement `" + e.k(placementName) + "`")
			},
			check: func(t *testing.T, e *env, run *fleet.UpdateRun) {
				st := run.Status
				if !slices.Equal(clusterNames(st.StagesStatus[0]), stage1Clusters) || !slices.Equal(clusterNames(st.StagesStatus[1]), stage2Clusters) ||
					!slices.Equal(clusterNames(*st.DeletionStageStatus), deletionClusters) || st.DeletionStageStatus.StageName != fleet.UpdateRunDeleteStageName {
					t.Errorf("stages %v %v %v", clusterNames(st.StagesStatus[0]), clusterNames(st.StagesStatus[1]), clusterNames(*st.DeletionStageStatus))
				}
				want := []fleet.StageTaskStatus{{Type: fleet.StageTaskTypeApproval, ApprovalRequestName: runName + "-after-stage2"}, {Type: fleet.StageTaskTypeTimedWait}}
				if !deepEqual(st.StagesStatus[1].AfterStageTaskStatus, want) {
					t.Errorf("stage2 after tasks %+v", st.StagesStatus[1].AfterStageTaskStatus)
				}
				if st.StagesStatus[0].BeforeStageTaskStatus[0].ApprovalRequestName != runName+"-before-stage1" {
					t.Errorf("stage1 before tasks %+v", st.StagesStatus[0].BeforeStageTaskStatus)
				}
				snap := twoStages()
				fleet.SetDefaultsUpdateStrategySpec(&snap)
				if !deepEqual(st.StagedUpdateStrategySnapshot, &snap) {
					t.Errorf("strategy snapshot %+v", st.StagedUpdateStrategySnapshot)
				}
			},
		},
		{
			name:  "26 invalid resource index",
			setup: func(e *env) { e.run.Spec.ResourceSnapshotIndex = "invalid-index" },
			wantMsg: func(e *env) string {
				return userMsg("invalid resource snapshot index `invalid-index` provided, expected an integer >= 0")
			},
		},
		{
			name:  "26b negative resource index",
			setup: func(e *env) { e.run.Spec.ResourceSnapshotIndex = "-1" },
			wantMsg: func(e *env) string {
				return userMsg("invalid resource snapshot index `-1` provided, expected an integer >= 0")
			},
		},
		{
			name:  "27 no snapshot with the index",
			setup: func(e *env) { e.deleteResourceSnapshots() },
			wantMsg: func(e *env) string {
				return userMsg("no resourceSnapshots with index `0` found for placement `" + e.k(placementName) + "`")
			},
		},
		{
			name: "27b only another placement's snapshot has the index",
			setup: func(e *env) {
				e.deleteResourceSnapshots()
				s := &fleet.ResourceSnapshot{ObjectMeta: metav1.ObjectMeta{Name: "other-0-snapshot", Namespace: e.ns,
					Labels:      map[string]string{fleet.PlacementTrackingLabel: "other", fleet.ResourceIndexLabel: "0"},
					Annotations: map[string]string{fleet.ResourceGroupHashAnnotation: "h"}}}
				if err := e.h.CreateResourceSnapshot(e.ctx, s); err != nil {
					t.Fatal(err)
				}
				e.resourceSnapshot(1, true, "h1")
			},
			wantMsg: func(e *env) string {
				return userMsg("no resourceSnapshots with index `0` found for placement `" + e.k(placementName) + "`")
			},
		},
		{
			name: "28 snapshot without a master",
			setup: func(e *env) {
				e.deleteResourceSnapshots()
				e.resourceSnapshot(0, true, "")
			},
			wantMsg: func(e *env) string {
				return unexpectedMsg2("no master resourceSnapshot found for placement " + e.k(placementName))
			},
			failureType: FailureTypeInternalError,
		},
		{
			name: "29 no index and no snapshot creates index 0",
			setup: func(e *env) {
				e.deleteResourceSnapshots()
				e.withSelection("v1")
				e.run.Spec.ResourceSnapshotIndex = ""
			},
			check: func(t *testing.T, e *env, run *fleet.UpdateRun) {
				if run.Status.ResourceSnapshotIndexUsed != "0" {
					t.Errorf("index used %q", run.Status.ResourceSnapshotIndexUsed)
				}
				if got := snapshotNames(e); !slices.Equal(got, []string{placementName + "-0-snapshot=true"}) {
					t.Errorf("snapshots %v", got)
				}
			},
		},
		{
			name: "30 no index and a changed selection creates the next index",
			setup: func(e *env) {
				e.withSelection("v1")
				e.run.Spec.ResourceSnapshotIndex = ""
			},
			check: func(t *testing.T, e *env, run *fleet.UpdateRun) {
				if run.Status.ResourceSnapshotIndexUsed != "1" {
					t.Errorf("index used %q", run.Status.ResourceSnapshotIndexUsed)
				}
				if got := snapshotNames(e); !slices.Equal(got, []string{placementName + "-0-snapshot=false", placementName + "-1-snapshot=true"}) {
					t.Errorf("snapshots %v", got)
				}
			},
		},
		{
			name: "31 no index after three snapshots creates index 3",
			setup: func(e *env) {
				e.deleteResourceSnapshots()
				e.resourceSnapshot(0, false, "h0")
				e.resourceSnapshot(1, false, "h1")
				e.resourceSnapshot(2, true, "h2")
				e.withSelection("v1")
				e.run.Spec.ResourceSnapshotIndex = ""
			},
			check: func(t *testing.T, e *env, run *fleet.UpdateRun) {
				if run.Status.ResourceSnapshotIndexUsed != "3" {
					t.Errorf("index used %q", run.Status.ResourceSnapshotIndexUsed)
				}
			},
		},
		{
			name: "32 no index and an unchanged selection reuses the latest",
			setup: func(e *env) {
				e.deleteResourceSnapshots()
				hash, err := resourcesnapshot.Hash(e.withSelection("v1"))
				if err != nil {
					t.Fatal(err)
				}
				e.resourceSnapshot(0, false, "h0")
				e.resourceSnapshot(1, false, "h1")
				e.resourceSnapshot(2, true, hash)
				e.run.Spec.ResourceSnapshotIndex = ""
			},
			check: func(t *testing.T, e *env, run *fleet.UpdateRun) {
				if run.Status.ResourceSnapshotIndexUsed != "2" {
					t.Errorf("index used %q", run.Status.ResourceSnapshotIndexUsed)
				}
				if got := len(snapshotNames(e)); got != 3 {
					t.Errorf("%d snapshots, want 3", got)
				}
			},
		},
		{
			name: "33 without overrides none are recorded and initialization is stable (with overrides: TestInitializationRecordsOverrideSnapshots)",
			setup: func(e *env) {
				e.run.Spec.State = fleet.StateInitialize
			},
			check: func(t *testing.T, e *env, run *fleet.UpdateRun) {
				for _, s := range run.Status.StagesStatus {
					for _, c := range s.Clusters {
						if c.ResourceOverrideSnapshots != nil || c.ClusterResourceOverrideSnapshots != nil {
							t.Errorf("%s has overrides", c.ClusterName)
						}
					}
				}
				wantStableInitialization(t, e, run)
			},
		},
	}
	for _, f := range families {
		for _, tt := range tests {
			t.Run(f.name+"/"+tt.name, func(t *testing.T) {
				e := newEnv(t, f.ns).fixture()
				if tt.setup != nil {
					tt.setup(e)
				}
				e.create()
				res, err := e.pass()
				if err != nil {
					t.Fatalf("pass: %v", err)
				}
				run := e.get()
				if tt.wantMsg == nil {
					if !isTrue(find(run.Status.Conditions, fleet.StagedUpdateRunConditionInitialized), run.Generation) {
						t.Fatalf("not initialized:%s", condsString(run.Status.Conditions))
					}
				} else {
					wantResult(t, "failed initialization", res, Result{Blocked: true, Ended: true})
					msg := tt.wantMsg(e)
					wantConds(t, "run", run.Status.Conditions, initFailed(msg))
					if tt.failureType != "" {
						if got := e.rec.last(); got != "Run/Initialized/False/UpdateRunInitializedFailed/"+tt.failureType {
							t.Errorf("metric %s, want failure type %s", got, tt.failureType)
						}
					}
					// Never retried.
					wantResult(t, "again", e.ok(), Result{Blocked: true, Ended: true})
					if again := e.get(); again.ResourceVersion != run.ResourceVersion {
						t.Error("a failed initialization was retried")
					}
				}
				if tt.check != nil {
					tt.check(t, e, run)
				}
			})
		}
	}
}

// TestInitializationRetriesTransientBindings is spec §9.2 15: a binding
// still Scheduled on an old policy snapshot is the scheduler mid-way; the
// run records nothing and retries.
func TestInitializationRetriesTransientBindings(t *testing.T) {
	e := newEnv(t, "").fixture()
	e.updateBinding("unscheduled-cluster-0", func(b *fleet.Binding) { b.Spec.State = fleet.BindingStateScheduled })
	e.create()
	for i := 0; i < 2; i++ {
		_, err := e.pass()
		want := "binding `/binding-unscheduled-cluster-0` with old policy snapshot `/test-placement-0` has state Scheduled, we might observe a transient state, need retry"
		if err == nil || isAborted(err) || err.Error() != want {
			t.Fatalf("err %v, want %q", err, want)
		}
		wantConds(t, "run", e.get().Status.Conditions)
	}
	e.updateBinding("unscheduled-cluster-0", func(b *fleet.Binding) { b.Spec.State = fleet.BindingStateUnscheduled })
	e.ok()
	wantConds(t, "run", e.get().Status.Conditions, initOK, runWaiting("before-stage", "stage1"))
}
