package gitops_test

import (
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"

	fleet "github.com/gitfleet/gitfleet/api/v1beta1"
)

// Through Git: a ConfigMap annotated prune: disabled that a commit deletes
// stays on the members, and their bindings say so; a cluster that leaves
// the placement loses its resources only once the deletion stage's
// approval request is approved by a commit.
func TestTheDeletionStageWaitsForItsApprovalAndPruneDisabledObjectsStay(t *testing.T) {
	files := quickstartFleet(t)
	files["strategy.yaml"] = []byte(string(files["strategy.yaml"]) + "  deleteStage:\n    beforeStageTasks:\n      - type: Approval\n")
	workload := string(files["workload.yaml"])
	files["workload.yaml"] = []byte(workload + `---
apiVersion: v1
kind: ConfigMap
metadata:
  name: kept
  namespace: test-namespace
  annotations:
    gitfleet.io/prune: disabled
data:
  key: value1
`)
	r := newFleetRepo(t, files)
	startDaemon(t, "file://"+r.remote, t.TempDir(), 50*time.Millisecond)
	r.approve(approvalName)
	r.waitPhase("example-run", fleet.PhaseSucceeded)

	// member1 leaves the placement, the ConfigMap leaves Git, and a second
	// run rolls that out.
	placement := strings.Replace(string(files["placement.yaml"]), "placementType: PickAll",
		"placementType: PickAll\n    affinity:\n      clusterAffinity:\n        requiredDuringSchedulingIgnoredDuringExecution:\n"+
			"          clusterSelectorTerms:\n            - labelSelector:\n                matchExpressions:\n"+
			"                  - {key: order, operator: NotIn, values: [\"2\"]}", 1)
	r.commit("member1 leaves; kept leaves Git", map[string][]byte{
		"placement.yaml": []byte(placement),
		"workload.yaml":  []byte(workload),
		"run2.yaml":      []byte(strings.Replace(string(files["run.yaml"]), "name: example-run", "name: example-run-2", 1)),
	})
	r.approve("example-run-2-after-canary")
	run := r.waitPhase("example-run-2", fleet.PhaseWaiting)
	eventually(t, "the run to wait for the deletion stage's approval", func() bool {
		run = r.run("example-run-2")
		c := meta.FindStatusCondition(run.Status.Conditions, fleet.StagedUpdateRunConditionProgressing)
		return c != nil && c.Reason == fleet.UpdateRunWaitingReason && strings.Contains(c.Message, fleet.UpdateRunDeleteStageName)
	})
	const gate = "example-run-2-before-delete-stage"
	eventually(t, "the approval request file "+gate, func() bool { return r.approval(gate) != nil })
	if a := r.approval(gate); a.Spec.TargetStage != fleet.UpdateRunDeleteStageName || a.Spec.TargetUpdateRun != "example-run-2" {
		t.Errorf("approval request %s spec %+v", gate, a.Spec)
	}
	if r.object("status/bindings/example-placement/member1.yaml") == nil {
		t.Fatal("member1's binding is gone before the deletion stage was approved")
	}
	for _, member := range []string{"member2", "member3"} {
		b := r.object("status/bindings/example-placement/" + member + ".yaml").(*fleet.Binding)
		c := meta.FindStatusCondition(b.Status.Conditions, fleet.ResourceBindingPruneSkipped)
		if c == nil || c.Status != "True" || !strings.HasSuffix(c.Message, "ConfigMap test-namespace/kept") {
			t.Errorf("binding of %s: PruneSkipped %+v, want True naming ConfigMap test-namespace/kept", member, c)
		}
	}

	r.approve(gate)
	r.waitPhase("example-run-2", fleet.PhaseSucceeded)
	eventually(t, "member1's binding to be deleted", func() bool {
		return r.object("status/bindings/example-placement/member1.yaml") == nil
	})
}
