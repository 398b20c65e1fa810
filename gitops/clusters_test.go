package gitops_test

import (
	"regexp"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/api/meta"

	fleet "github.com/gitfleet/gitfleet/api/v1beta1"
	"github.com/gitfleet/gitfleet/internal/kubetest"
)

// clusterFleet is the quickstart delivered to real clusters: every member
// uses the kubeconfig context of its name, the soak is 1s, and the canary
// stage also waits for an approval before it starts, so the test can look
// at every member while the rollout holds between stages.
func clusterFleet(t testing.TB) map[string][]byte {
	t.Helper()
	files := timedFleet(t, "0s", "1s")
	docs := strings.Split(string(files["members.yaml"]), "\n---")
	name := regexp.MustCompile(`(?m)^  name: (\S+)$`)
	for i, doc := range docs {
		m := name.FindStringSubmatch(doc)
		if m == nil {
			continue
		}
		doc = strings.Replace(doc, "gitfleet.io/driver: simulated", "gitfleet.io/driver: kubeconfig:"+m[1], 1)
		docs[i] = regexp.MustCompile(`(?m)^\s*gitfleet.io/sim-available-after: .*\n`).ReplaceAllString(doc, "")
	}
	files["members.yaml"] = []byte(strings.Join(docs, "\n---"))
	strategy := string(files["strategy.yaml"])
	strategy = strings.Replace(strategy, "      afterStageTasks:\n        - type: Approval",
		"      beforeStageTasks:\n        - type: Approval\n      afterStageTasks:\n        - type: Approval", 1)
	files["strategy.yaml"] = []byte(strategy)
	files["workload.yaml"] = append(files["workload.yaml"], []byte(`---
apiVersion: v1
kind: ConfigMap
metadata:
  name: extra-cm
  namespace: test-namespace
data:
  key: extra
`)...)
	return files
}

// The seed demo on three real API servers through `gitfleet serve`:
// member2 (staging), the soak, the canary stage held by its before-stage
// approval, member1 and member3, the after-stage approval. Each member's
// ConfigMap changes exactly when its stage starts, never before, and an
// object a new snapshot drops is pruned from a member only when the new
// run reaches it.
func TestTheQuickstartRollsOutToRealClustersStageByStage(t *testing.T) {
	clusters := kubetest.Start(t, "member1", "member2", "member3")
	member1, member2, member3 := clusters[0], clusters[1], clusters[2]
	files := clusterFleet(t)
	r := newFleetRepo(t, files)
	startServe(t, "--repo", "file://"+r.remote, "--cache-dir", t.TempDir(), "--interval", "200ms",
		"--status-interval", "100ms", "--metrics-addr", "", "--kubeconfig", kubetest.Kubeconfig(t, clusters, nil))

	value := func(c *kubetest.Cluster) string { return c.ConfigMapValue("test-namespace", "test-cm", "key") }
	hasExtra := func(c *kubetest.Cluster) bool { return c.Get("v1", "ConfigMap", "test-namespace", "extra-cm") != nil }

	eventually(t, "the canary stage's before-stage approval request", func() bool {
		return r.approval("example-run-before-canary") != nil
	})
	if value(member2) != "value1" || value(member1) != "" || value(member3) != "" {
		t.Fatalf("before canary starts: member1=%q member2=%q member3=%q, want only member2 (staging) to have value1",
			value(member1), value(member2), value(member3))
	}
	r.approve("example-run-before-canary")
	eventually(t, "the canary stage's after-stage approval request", func() bool {
		return r.approval("example-run-after-canary") != nil
	})
	for _, c := range clusters {
		if value(c) != "value1" || !hasExtra(c) {
			t.Errorf("%s after canary: test-cm %q, extra-cm present %v", c.Name, value(c), hasExtra(c))
		}
		b := r.object("status/bindings/example-placement/" + c.Name + ".yaml").(*fleet.Binding)
		if !meta.IsStatusConditionTrue(b.Status.Conditions, fleet.ResourceBindingAvailable) {
			t.Errorf("binding of %s is not Available: %v", c.Name, b.Status.Conditions)
		}
	}
	r.approve("example-run-after-canary")
	r.waitPhase("example-run", fleet.PhaseSucceeded)

	// Snapshot 1: a new value, and extra-cm dropped.
	workload := strings.Replace(string(files["workload.yaml"]), "key: value1", "key: value2", 1)
	workload = workload[:strings.Index(workload, "---\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: extra-cm")]
	run2 := strings.Replace(string(files["run.yaml"]), "name: example-run", "name: example-run-2", 1)
	r.commit("value2, no extra-cm, run 2", map[string][]byte{"workload.yaml": []byte(workload), "run2.yaml": []byte(run2)})

	eventually(t, "run 2's before-canary approval request", func() bool {
		return r.approval("example-run-2-before-canary") != nil
	})
	if value(member2) != "value2" || hasExtra(member2) {
		t.Errorf("member2 (reached by run 2): test-cm %q, extra-cm present %v; want value2 and extra-cm pruned", value(member2), hasExtra(member2))
	}
	for _, c := range []*kubetest.Cluster{member1, member3} {
		if value(c) != "value1" || !hasExtra(c) {
			t.Errorf("%s (not reached by run 2 yet): test-cm %q, extra-cm present %v; want both untouched", c.Name, value(c), hasExtra(c))
		}
	}
	r.approve("example-run-2-before-canary")
	r.approve("example-run-2-after-canary")
	r.waitPhase("example-run-2", fleet.PhaseSucceeded)
	for _, c := range clusters {
		if value(c) != "value2" || hasExtra(c) {
			t.Errorf("%s after run 2: test-cm %q, extra-cm present %v", c.Name, value(c), hasExtra(c))
		}
	}
}
