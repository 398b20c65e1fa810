package gitops_test

import (
	"fmt"
	"log/slog"
	"regexp"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"

	fleet "github.com/gitfleet/gitfleet/api/v1beta1"
	"github.com/gitfleet/gitfleet/gitsource/gitops"
	"github.com/gitfleet/gitfleet/internal/testing/kubetest"
	"github.com/gitfleet/gitfleet/reconciler/member/kube"
)

// webDeployment is a Deployment of one pod, appended to workload.yaml.
const webDeployment = `---
apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
  namespace: test-namespace
spec:
  replicas: 1
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec:
      containers: [{name: web, image: "registry.invalid/web:1"}]
`

// clusterFleet is kubeconfigFleet with a Deployment and a second ConfigMap
// in the workload.
func clusterFleet(t testing.TB) map[string][]byte {
	t.Helper()
	files := kubeconfigFleet(t)
	files["workload.yaml"] = append(files["workload.yaml"], []byte(webDeployment+`---
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

// kubeconfigFleet is the quickstart with every member reached through the
// kubeconfig context of its name, a 1s soak, and a before-stage approval on
// the canary stage, so a test can look at every member while the rollout
// holds between stages.
func kubeconfigFleet(t testing.TB) map[string][]byte {
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
	return files
}

// The seed demo on three real clusters (API server, controller-manager,
// scheduler, kwok node) through `gitfleet serve`: member2 (staging), the
// soak, the canary stage held by its before-stage approval, member1 and
// member3, the after-stage approval. Each member's ConfigMap and
// Deployment image change exactly when its stage starts, never before, a
// stage ends only once its Deployments are available, and an object a new
// snapshot drops is pruned from a member only when the new run reaches it.
func TestTheQuickstartRollsOutToRealClustersStageByStage(t *testing.T) {
	clusters := startClustersWithWorkloads(t, "member1", "member2", "member3")
	member1, member2, member3 := clusters[0], clusters[1], clusters[2]
	files := clusterFleet(t)
	r := newFleetRepo(t, files)
	startServe(t, "--repo", "file://"+r.remote, "--cache-dir", t.TempDir(), "--interval", "200ms",
		"--status-interval", "100ms", "--metrics-addr", "", "--kubeconfig", kubetest.Kubeconfig(t, clusters, nil))

	value := func(c *kubetest.Cluster) string { return c.ConfigMapValue("test-namespace", "test-cm", "key") }
	hasExtra := func(c *kubetest.Cluster) bool { return c.Get("v1", "ConfigMap", "test-namespace", "extra-cm") != nil }
	// image is the Deployment's image once its controller rolled it out
	// and made it available, "" before.
	image := func(c *kubetest.Cluster) string {
		d := c.Get("apps/v1", "Deployment", "test-namespace", "web")
		if d == nil {
			return ""
		}
		observed, _, _ := unstructured.NestedInt64(d.Object, "status", "observedGeneration")
		available, _, _ := unstructured.NestedInt64(d.Object, "status", "availableReplicas")
		updated, _, _ := unstructured.NestedInt64(d.Object, "status", "updatedReplicas")
		if observed != d.GetGeneration() || available != 1 || updated != 1 {
			return "not rolled out"
		}
		containers, _, _ := unstructured.NestedSlice(d.Object, "spec", "template", "spec", "containers")
		img, _, _ := unstructured.NestedString(containers[0].(map[string]any), "image")
		return img
	}

	eventually(t, "the canary stage's before-stage approval request", func() bool {
		return r.approval("example-run-before-canary") != nil
	})
	if value(member2) != "value1" || value(member1) != "" || value(member3) != "" {
		t.Fatalf("before canary starts: member1=%q member2=%q member3=%q, want only member2 (staging) to have value1",
			value(member1), value(member2), value(member3))
	}
	if image(member2) != "registry.invalid/web:1" || image(member1) != "" || image(member3) != "" {
		t.Fatalf("before canary starts: Deployment member1=%q member2=%q member3=%q, want only member2's, available",
			image(member1), image(member2), image(member3))
	}
	r.approve("example-run-before-canary")
	eventually(t, "the canary stage's after-stage approval request", func() bool {
		return r.approval("example-run-after-canary") != nil
	})
	for _, c := range clusters {
		if value(c) != "value1" || !hasExtra(c) || image(c) != "registry.invalid/web:1" {
			t.Errorf("%s after canary: test-cm %q, extra-cm present %v, Deployment %q", c.Name, value(c), hasExtra(c), image(c))
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
	workload = strings.Replace(workload, "web:1", "web:2", 1)
	workload = workload[:strings.Index(workload, "---\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: extra-cm")]
	run2 := strings.Replace(string(files["run.yaml"]), "name: example-run", "name: example-run-2", 1)
	r.commit("value2, no extra-cm, run 2", map[string][]byte{"workload.yaml": []byte(workload), "run2.yaml": []byte(run2)})

	eventually(t, "run 2's before-canary approval request", func() bool {
		return r.approval("example-run-2-before-canary") != nil
	})
	if value(member2) != "value2" || hasExtra(member2) || image(member2) != "registry.invalid/web:2" {
		t.Errorf("member2 (reached by run 2): test-cm %q, extra-cm present %v, Deployment %q; want value2, extra-cm pruned, web:2 available",
			value(member2), hasExtra(member2), image(member2))
	}
	for _, c := range []*kubetest.Cluster{member1, member3} {
		if value(c) != "value1" || !hasExtra(c) || image(c) != "registry.invalid/web:1" {
			t.Errorf("%s (not reached by run 2 yet): test-cm %q, extra-cm present %v, Deployment %q; want all untouched",
				c.Name, value(c), hasExtra(c), image(c))
		}
	}

	// member1's API server dies as the canary stage starts: member3 is not
	// affected, member1's binding says why it waits, and the run finishes
	// by itself once the API server is back.
	member1.StopAPIServer()
	r.approve("example-run-2-before-canary")
	eventually(t, "member3 to get value2 while member1 is down", func() bool { return value(member3) == "value2" })
	eventually(t, "member1's binding to say its API server cannot be reached", func() bool {
		b, _ := r.object("status/bindings/example-placement/member1.yaml").(*fleet.Binding)
		c := meta.FindStatusCondition(b.Status.Conditions, fleet.ResourceBindingApplied)
		return c != nil && c.Status == metav1.ConditionFalse && strings.Contains(c.Message, `kubeconfig context "member1"`) &&
			strings.Contains(c.Message, "connection refused")
	})
	if phase := r.run("example-run-2").Phase(); phase == fleet.PhaseSucceeded || r.approval("example-run-2-after-canary") != nil {
		t.Fatalf("run 2 went past the canary stage while member1 was down (phase %s)", phase)
	}
	member1.StartAPIServer()
	r.approve("example-run-2-after-canary")
	r.waitPhase("example-run-2", fleet.PhaseSucceeded)
	for _, c := range clusters {
		if value(c) != "value2" || hasExtra(c) || image(c) != "registry.invalid/web:2" {
			t.Errorf("%s after run 2: test-cm %q, extra-cm present %v, Deployment %q", c.Name, value(c), hasExtra(c), image(c))
		}
	}

	// member3 leaves the placement (its environment is retired): run 3's
	// deletion stage removes everything gitfleet applied there.
	placement := strings.Replace(string(files["placement.yaml"]), "    placementType: PickAll\n", `    placementType: PickAll
    affinity:
      clusterAffinity:
        requiredDuringSchedulingIgnoredDuringExecution:
          clusterSelectorTerms:
            - labelSelector:
                matchExpressions:
                  - {key: environment, operator: In, values: [staging, canary]}
`, 1)
	members := strings.Replace(string(files["members.yaml"]), "environment: canary\n    order: \"1\"", "environment: retired\n    order: \"1\"", 1)
	if members == string(files["members.yaml"]) || placement == string(files["placement.yaml"]) {
		t.Fatal("the test could not retire member3: the quickstart changed")
	}
	run3 := strings.Replace(string(files["run.yaml"]), "name: example-run", "name: example-run-3", 1)
	r.commit("retire member3, run 3", map[string][]byte{"placement.yaml": []byte(placement), "members.yaml": []byte(members), "run3.yaml": []byte(run3)})
	r.approve("example-run-3-before-canary")
	r.approve("example-run-3-after-canary")
	r.waitPhase("example-run-3", fleet.PhaseSucceeded)
	eventually(t, "member3's objects to be removed", func() bool {
		// With a controller-manager, the namespace finishes terminating.
		return value(member3) == "" && member3.Get("v1", "Namespace", "", "test-namespace") == nil &&
			member3.Get("v1", "ConfigMap", kube.InventoryNamespace, "example-placement-work") == nil
	})
	if value(member1) != "value2" || value(member2) != "value2" {
		t.Errorf("after member3 left: member1 %q, member2 %q, want value2 on both", value(member1), value(member2))
	}

	// Rollback: a run of snapshot 0 restores its objects, extra-cm included.
	run4 := strings.Replace(string(files["run.yaml"]), "name: example-run", "name: example-run-4", 1)
	run4 = strings.Replace(run4, "  state: Run", "  state: Run\n  resourceSnapshotIndex: \"0\"", 1)
	r.commit("roll back to snapshot 0", map[string][]byte{"run4.yaml": []byte(run4)})
	t.Cleanup(func() {
		if t.Failed() {
			d, _ := yaml.Marshal(member2.Get("apps/v1", "Deployment", "test-namespace", "web").Object["status"])
			t.Logf("run 4:\n%s\nmember2's Deployment status:\n%s", r.file("status/runs/example-run-4.yaml"), d)
		}
	})
	r.approve("example-run-4-before-canary")
	r.approve("example-run-4-after-canary")
	r.waitPhase("example-run-4", fleet.PhaseSucceeded)
	for _, c := range []*kubetest.Cluster{member1, member2} {
		if value(c) != "value1" || !hasExtra(c) || image(c) != "registry.invalid/web:1" {
			t.Errorf("%s after the rollback: test-cm %q, extra-cm present %v, Deployment %q; want snapshot 0's", c.Name, value(c), hasExtra(c), image(c))
		}
	}
}

// A Deployment that never becomes available (no controller runs on the
// member, as when its pods cannot start): the run goes Stuck and the
// placement lists the Deployment as a failed placement. serve is killed
// with SIGKILL right after the apply; a new serve with an empty cache does
// not count the cluster as done, and prune still knows the inventory
// recorded on the member: fixing the workload in Git (a new run) removes
// the Deployment and succeeds.
func TestADeploymentThatNeverBecomesAvailableGoesStuckAndAFixInGitRecovers(t *testing.T) {
	clusters := startClusters(t, "member1", "member2", "member3")
	member2 := clusters[1]
	files := timedFleet(t, "0s", "1s")
	files["members.yaml"] = clusterFleet(t)["members.yaml"]
	files["workload.yaml"] = append(files["workload.yaml"], []byte(webDeployment)...)
	r := newFleetRepo(t, files)
	kubeconfig := kubetest.Kubeconfig(t, clusters, nil)
	args := []string{"--repo", "file://" + r.remote, "--interval", "200ms", "--status-interval", "100ms",
		"--metrics-addr", "", "--kubeconfig", kubeconfig, "--stuck-threshold", "2s"}
	first := startServe(t, append(args, "--cache-dir", t.TempDir())...)
	eventually(t, "the Deployment on member2 (staging)", func() bool {
		return member2.Get("apps/v1", "Deployment", "test-namespace", "web") != nil
	})
	first.kill()

	startServe(t, append(args, "--cache-dir", t.TempDir())...)
	run := r.waitPhase("example-run", fleet.PhaseStuck)
	if c := meta.FindStatusCondition(run.Status.Conditions, fleet.StagedUpdateRunConditionProgressing); !strings.Contains(c.Message, "member2") {
		t.Errorf("Stuck message %q does not name member2", c.Message)
	}
	b := r.object("status/bindings/example-placement/member2.yaml").(*fleet.Binding)
	if meta.IsStatusConditionTrue(b.Status.Conditions, fleet.ResourceBindingAvailable) {
		t.Fatalf("member2 counts as available with a Deployment that never was: %v", b.Status.Conditions)
	}
	eventually(t, "the placement to list the Deployment as failed on member2", func() bool {
		p, _ := r.object("status/placements/example-placement.yaml").(*fleet.Placement)
		for _, s := range p.Status.PlacementStatuses {
			for _, f := range s.FailedPlacements {
				if s.ClusterName == "member2" && f.Kind == "Deployment" && f.Name == "web" {
					return true
				}
			}
		}
		return false
	})

	fixed := strings.Split(string(files["workload.yaml"]), "---\napiVersion: apps/v1")[0]
	run2 := strings.Replace(string(files["run.yaml"]), "name: example-run", "name: example-run-2", 1)
	r.commit("drop the Deployment, run 2", map[string][]byte{"workload.yaml": []byte(fixed), "run2.yaml": []byte(run2)})
	r.approve("example-run-2-after-canary")
	r.waitPhase("example-run-2", fleet.PhaseSucceeded)
	for _, c := range clusters {
		if c.Get("apps/v1", "Deployment", "test-namespace", "web") != nil {
			t.Errorf("the Deployment is still on %s after the fix", c.Name)
		}
	}
}

// oneStageFleet is n members reached through kubeconfig contexts
// member1..n, one placement of test-namespace and one stage that updates
// them all at once (maxConcurrency 100%).
func oneStageFleet(n int) map[string][]byte {
	var members strings.Builder
	for i := 1; i <= n; i++ {
		fmt.Fprintf(&members, `---
apiVersion: cluster.kubernetes-fleet.io/v1beta1
kind: MemberCluster
metadata:
  name: member%d
  labels: {environment: prod}
  annotations: {gitfleet.io/driver: "kubeconfig:member%d"}
spec:
  identity: {kind: ServiceAccount, name: fleet-member-agent, namespace: fleet-system}
`, i, i)
	}
	return map[string][]byte{
		"members.yaml": []byte(members.String()),
		"placement.yaml": []byte(`apiVersion: placement.kubernetes-fleet.io/v1beta1
kind: ClusterResourcePlacement
metadata: {name: example-placement}
spec:
  resourceSelectors: [{group: "", kind: Namespace, name: test-namespace, version: v1}]
  policy: {placementType: PickAll}
  strategy: {type: External}
`),
		"strategy.yaml": []byte(`apiVersion: placement.kubernetes-fleet.io/v1beta1
kind: ClusterStagedUpdateStrategy
metadata: {name: example-strategy}
spec:
  stages:
  - name: prod
    labelSelector: {matchLabels: {environment: prod}}
    maxConcurrency: "100%"
`),
		"workload.yaml": []byte(workloadValue(0)),
	}
}

func workloadValue(i int) string {
	return fmt.Sprintf(`apiVersion: v1
kind: Namespace
metadata: {name: test-namespace}
---
apiVersion: v1
kind: ConfigMap
metadata: {name: test-cm, namespace: test-namespace}
data: {key: value%d}
`, i)
}

func runNamed(name string) []byte {
	return []byte(`apiVersion: placement.kubernetes-fleet.io/v1beta1
kind: ClusterStagedUpdateRun
metadata: {name: ` + name + `}
spec: {placementName: example-placement, stagedRolloutStrategyName: example-strategy, state: Run}
`)
}

// BenchmarkRolloutToRealClusters is the time from the push of a new
// workload and run to the run's Succeeded in the remote, with every member
// a real API server, all updated in one stage: how the end-to-end time of
// a rollout grows with the number of members.
//
//	go test ./gitsource/gitops -run '^$' -bench RolloutToRealClusters -benchtime 5x
func BenchmarkRolloutToRealClusters(b *testing.B) {
	for _, n := range []int{1, 3, 10} {
		b.Run(fmt.Sprintf("members=%d", n), func(b *testing.B) {
			names := make([]string, n)
			for i := range names {
				names[i] = fmt.Sprintf("member%d", i+1)
			}
			clusters := startClusters(b, names...)
			drivers, err := kube.Load(kube.Options{Kubeconfig: kubetest.Kubeconfig(b, clusters, nil), PollInterval: 200 * time.Millisecond,
				Log: slog.New(slog.DiscardHandler)})
			if err != nil {
				b.Fatal(err)
			}
			r := newFleetRepo(b, oneStageFleet(n))
			d := startDaemonWith(b, "file://"+r.remote, b.TempDir(), 20*time.Millisecond, func(c *gitops.Config) { c.Clusters = drivers })
			drivers.Start(b.Context(), d.Hub.Delivery())
			i := 0
			for b.Loop() {
				i++
				name := fmt.Sprintf("run-%d", i)
				r.commit(name, map[string][]byte{"workload.yaml": []byte(workloadValue(i)), name + ".yaml": runNamed(name)})
				r.waitPhase(name, fleet.PhaseSucceeded)
			}
			b.StopTimer()
			for _, c := range clusters {
				if v := c.ConfigMapValue("test-namespace", "test-cm", "key"); v != fmt.Sprintf("value%d", i) {
					b.Errorf("%s has %q after the last run, want value%d", c.Name, v, i)
				}
			}
		})
	}
}
