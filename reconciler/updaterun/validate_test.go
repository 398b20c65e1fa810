package updaterun

import (
	"context"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"

	fleet "github.com/gitfleet/gitfleet/api/v1beta1"
	"github.com/gitfleet/gitfleet/reconciler/hub"
)

// plainHub hides the embedded hub's Revisioner: every pass re-derives the
// plan, as with a hub that cannot tell what changed.
type plainHub struct{ hub.Hub }

// countingHub counts the fleet-wide reads a pass makes.
type countingHub struct {
	hub.Hub
	lists atomic.Int64
	gets  atomic.Int64
}

func (c *countingHub) GetBinding(ctx context.Context, k hub.Key) (*fleet.Binding, error) {
	c.gets.Add(1)
	return c.Hub.GetBinding(ctx, k)
}

func (c *countingHub) PlanRevision() uint64 { return c.Hub.(hub.Revisioner).PlanRevision() }
func (c *countingHub) ListBindings(ctx context.Context, k hub.Key) ([]*fleet.Binding, error) {
	c.lists.Add(1)
	return c.Hub.ListBindings(ctx, k)
}
func (c *countingHub) ListMemberClusters(ctx context.Context) ([]*fleet.MemberCluster, error) {
	c.lists.Add(1)
	return c.Hub.ListMemberClusters(ctx)
}

func (e *env) mutateStatus(f func(st *fleet.UpdateRunStatus)) {
	r := e.get()
	f(&r.Status)
	if err := e.h.UpdateUpdateRunStatus(e.ctx, r); err != nil {
		e.t.Fatal(err)
	}
}

// TestValidation is spec §9.3: a run waiting for its first approval fails,
// without touching its stages, when what it was planned on drifts.
func TestValidation(t *testing.T) {
	const abort = "cannot continue the updateRun: "
	tests := []struct {
		name        string
		pickAll     bool
		change      func(e *env)
		wantMsg     func(e *env) string // "~" prefix: contains; nil: the run goes on
		failureType string
	}{
		{name: "1 placement deleted", change: func(e *env) { e.h.DeletePlacement(e.pkey()) },
			wantMsg: func(*env) string { return userMsg("parent placement not found") }, failureType: FailureTypeUserError},
		{name: "2 placement back with RollingUpdate", change: func(e *env) {
			e.h.DeletePlacement(e.pkey())
			e.placement(func(p *fleet.Placement) { p.Spec.Strategy.Type = fleet.RollingUpdateRolloutStrategyType })
		}, wantMsg: func(*env) string {
			return userMsg("parent placement does not have an external rollout strategy, current strategy: RollingUpdate")
		}},
		{name: "3 apply strategy changed", change: func(e *env) {
			e.placement(func(p *fleet.Placement) {
				p.Spec.Strategy.ApplyStrategy = &fleet.ApplyStrategy{Type: fleet.ApplyStrategyTypeServerSideApply}
			})
		}, wantMsg: func(*env) string {
			return "~" + abort + "failed to process the request due to a client error: the applyStrategy in the updateRun is outdated, latest: &{"
		}, failureType: FailureTypeUserError},
		{name: "4 latest policy snapshot gone", change: func(e *env) {
			e.updatePolicySnapshot(1, func(s *fleet.PolicySnapshot) { s.Labels[fleet.IsLatestSnapshotLabel] = "false" })
		}, wantMsg: func(e *env) string {
			return validationPrefix + "no latest policy snapshot found for placement " + e.k(placementName)
		}, failureType: FailureTypeInternalError},
		{name: "5 new latest policy snapshot", change: func(e *env) {
			e.updatePolicySnapshot(1, func(s *fleet.PolicySnapshot) { s.Labels[fleet.IsLatestSnapshotLabel] = "false" })
			e.policySnapshot(2, true, pickN(10), true)
		}, wantMsg: func(*env) string {
			return abort + "the policy snapshot index used in the updateRun is outdated, latest: 2, recorded: 1"
		}},
		{name: "6 cluster count annotation changed", change: func(e *env) {
			e.updatePolicySnapshot(1, func(s *fleet.PolicySnapshot) { s.Annotations[fleet.NumberOfClustersAnnotation] = "11" })
		}, wantMsg: func(*env) string {
			return abort + "the cluster count initialized in the updateRun is outdated, latest: 11, recorded: 10"
		}},
		{name: "7a nil strategy snapshot", change: func(e *env) {
			e.mutateStatus(func(st *fleet.UpdateRunStatus) { st.StagedUpdateStrategySnapshot = nil })
		}, wantMsg: func(*env) string {
			return abort + "unexpected behavior which cannot be handled by the controller: the updateRun has nil updateStrategySnapshot"
		}},
		{name: "7b nil stages", change: func(e *env) {
			e.mutateStatus(func(st *fleet.UpdateRunStatus) { st.StagesStatus = nil })
		}, wantMsg: func(*env) string {
			return abort + "unexpected behavior which cannot be handled by the controller: the updateRun has nil stagesStatus"
		}},
		{name: "7c nil deletion stage", change: func(e *env) {
			e.mutateStatus(func(st *fleet.UpdateRunStatus) { st.DeletionStageStatus = nil })
		}, wantMsg: func(*env) string {
			return abort + "unexpected behavior which cannot be handled by the controller: the updateRun has nil deletionStageStatus"
		}},
		{name: "8 stage appended to the strategy snapshot", change: func(e *env) {
			e.mutateStatus(func(st *fleet.UpdateRunStatus) {
				st.StagedUpdateStrategySnapshot.Stages = append(st.StagedUpdateStrategySnapshot.Stages, fleet.StageConfig{Name: "stage3"})
			})
		}, wantMsg: func(*env) string {
			return abort + "the number of stages in the updateRun has changed, new: 3, existing: 2"
		}},
		{name: "9 stage renamed in the strategy snapshot", change: func(e *env) {
			e.mutateStatus(func(st *fleet.UpdateRunStatus) { st.StagedUpdateStrategySnapshot.Stages[0].Name = "stage1-renamed" })
		}, wantMsg: func(*env) string {
			return abort + "index `0` stage name in the updateRun has changed, new: stage1-renamed, existing: stage1"
		}},
		{name: "10 westus cluster relabelled eastus", change: func(e *env) {
			e.member("cluster-0", map[string]string{"group": "prod", "region": "eastus", "index": "9"})
		}, wantMsg: func(*env) string {
			return abort + "the number of clusters in index `0` stage has changed, new: 6, existing: 5"
		}},
		{name: "11 two eastus clusters swap their order", change: func(e *env) {
			e.member("cluster-3", map[string]string{"group": "prod", "region": "eastus", "index": "8"})
			e.member("cluster-1", map[string]string{"group": "prod", "region": "eastus", "index": "6"})
		}, wantMsg: func(*env) string {
			return abort + "the `3` cluster in the `0` stage has changed, new: cluster-1, existing: cluster-3"
		}},
		{name: "12 PickAll ignores the cluster count annotation", pickAll: true, change: func(e *env) {
			e.updatePolicySnapshot(1, func(s *fleet.PolicySnapshot) {
				s.Annotations = map[string]string{fleet.NumberOfClustersAnnotation: "3"}
			})
		}},
	}
	hubs := []struct {
		name string
		wrap func(hub.Hub) hub.Hub
	}{
		{"cached", func(h hub.Hub) hub.Hub { return h }},
		{"uncached", func(h hub.Hub) hub.Hub { return plainHub{h} }},
	}
	for _, f := range families {
		for _, hb := range hubs {
			for _, tt := range tests {
				t.Run(f.name+"/"+hb.name+"/"+tt.name, func(t *testing.T) {
					e := newEnv(t, f.ns).fixture()
					e.r.Hub = hb.wrap(e.h)
					if tt.pickAll {
						e.updatePolicySnapshot(1, func(s *fleet.PolicySnapshot) {
							s.Spec.Policy = &fleet.PlacementPolicy{PlacementType: fleet.PickAllPlacementType}
						})
					}
					e.create()
					e.ok()
					e.ok() // a validated pass, so a cached plan exists
					tt.change(e)
					res, err := e.pass()
					if err != nil {
						t.Fatalf("pass: %v", err)
					}
					run := e.get()
					if len(run.Status.StagesStatus) > 0 {
						wantConds(t, "stage1", run.Status.StagesStatus[0].Conditions, stageWaitPre)
					}
					if tt.wantMsg == nil {
						wantResult(t, "still waiting", res, Result{RequeueAfter: ApprovalPollInterval, Blocked: true})
						wantConds(t, "run", run.Status.Conditions, initOK, runWaiting("before-stage", "stage1"))
						return
					}
					wantResult(t, "failed", res, Result{Blocked: true, Ended: true})
					wantConds(t, "run", run.Status.Conditions, runFailed(tt.wantMsg(e))...)
					if tt.failureType != "" && !strings.HasSuffix(e.rec.last(), "/"+tt.failureType) {
						t.Errorf("metric %s, want failure type %s", e.rec.last(), tt.failureType)
					}
				})
			}
		}
	}
}

// TestPassesFollowTheActiveStage: with a Revisioner hub, passes within a
// stage neither list the fleet's bindings nor its member clusters; the
// engine's own Scheduled→Bound writes do not invalidate the plan, anyone
// else's change does.
func TestPassesFollowTheActiveStage(t *testing.T) {
	e := newEnv(t, "").fixture()
	ch := &countingHub{Hub: e.h}
	e.r.Hub = ch
	e.create()
	e.ok()
	e.approve(runName + "-before-stage1")
	e.ok() // first validation derives the plan
	ch.lists.Store(0)
	rollStage(t, e, 0, stage1Clusters)
	if n := ch.lists.Load(); n != 0 {
		t.Errorf("%d fleet-wide lists while rolling a stage, want 0", n)
	}
	e.member("cluster-0", map[string]string{"group": "prod", "region": "westus", "index": "9", "new": "label"})
	e.ok()
	if n := ch.lists.Load(); n != 2 {
		t.Errorf("%d fleet-wide lists after a member changed, want 2 (bindings, members)", n)
	}
}

func TestApplyStrategyOutdatedMessageIsDeterministic(t *testing.T) {
	a := &fleet.ApplyStrategy{ComparisonOption: fleet.ComparisonOptionTypePartialComparison, WhenToApply: fleet.WhenToApplyTypeAlways,
		Type: fleet.ApplyStrategyTypeServerSideApply, ServerSideApplyConfig: &fleet.ServerSideApplyConfig{}, WhenToTakeOver: fleet.WhenToTakeOverTypeAlways}
	if got, want := formatApplyStrategy(a), "&{PartialComparison Always ServerSideApply false &{false} Always}"; got != want {
		t.Errorf("formatApplyStrategy = %q, want %q", got, want)
	}
	a.ServerSideApplyConfig, a.Type = nil, fleet.ApplyStrategyTypeClientSideApply
	if got, want := formatApplyStrategy(a), fmt.Sprintf("%v", a); got != want {
		t.Errorf("without serverSideApplyConfig formatApplyStrategy = %q, want upstream's %%v %q", got, want)
	}
}
