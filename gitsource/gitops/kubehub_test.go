package gitops_test

import (
	"encoding/json"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/api/meta"

	fleet "github.com/gitfleet/gitfleet/api/v1beta1"
	"github.com/gitfleet/gitfleet/internal/testing/kubetest"
	"github.com/gitfleet/gitfleet/status"
)

// kubectl runs the real kubectl of the test binaries against a cluster.
type kubectl struct {
	t          testing.TB
	bin        string
	kubeconfig string
}

func (k kubectl) try(args ...string) (string, error) {
	out, err := exec.Command(k.bin, append([]string{"--kubeconfig", k.kubeconfig}, args...)...).CombinedOutput()
	return string(out), err
}

func (k kubectl) run(args ...string) string {
	k.t.Helper()
	out, err := k.try(args...)
	if err != nil {
		k.t.Fatalf("kubectl %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return out
}

// startKubeHub starts the hub's API server with gitfleet's CRDs installed,
// and one API server per member named. kubectl's kubeconfig has a context
// per cluster, named after it, the hub's the current one; clusters are the
// hub, then the members.
func startKubeHub(t *testing.T, members ...string) (kubectl, []*kubetest.Cluster) {
	t.Helper()
	clusters := startClusters(t, append([]string{"hub"}, members...)...)
	k := kubectl{t: t, bin: filepath.Join(kubetest.Bin(t), "kubectl"), kubeconfig: kubetest.Kubeconfig(t, clusters, nil)}
	k.run("apply", "--server-side", "-R", "-f", filepath.Join("..", "..", "config", "crd"))
	k.run("wait", "--for", "condition=established", "crd", "--all", "--timeout", "5m")
	return k, clusters
}

// serveOnKubeHub are the arguments of `gitfleet serve --hub kube` on r with
// k's hub, caching in cacheDir; kubeconfig:<context> members are reached
// through k's kubeconfig too.
func serveOnKubeHub(r *fleetRepo, k kubectl, cacheDir string) []string {
	return []string{"--repo", "file://" + r.remote, "--cache-dir", cacheDir, "--interval", "100ms",
		"--status-interval", "50ms", "--metrics-addr", "",
		"--hub", "kube", "--hub-kubeconfig", k.kubeconfig, "--hub-context", "hub", "--kubeconfig", k.kubeconfig}
}

// TestServeOnAKubernetesHub walks seed 003 (examples/quickstart) with
// `gitfleet serve --hub kube` and the real kubectl against the hub: the
// fleet objects pushed to Git are applied to the hub, the snapshots and
// the run show as KubeFleet's do, the hub's API server restarts mid-run,
// the approval is given with the issue's `kubectl patch … --subresource=
// status`, the run finishes, and the approval and the finished run appear
// in Git with the bytes the hub's objects encode to.
func TestServeOnAKubernetesHub(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a kube-apiserver and gitfleet serve")
	}
	k, clusters := startKubeHub(t)
	hubCluster := clusters[0]

	files := quickstartFleet(t)
	r := newFleetRepo(t, files)
	startServe(t, serveOnKubeHub(r, k, t.TempDir())...)

	var out string
	eventually(t, "the resource snapshot on the hub with its index, latest and commit", func() bool {
		out, _ = k.try("get", "clusterresourcesnapshots", "--show-labels")
		return strings.Contains(out, "example-placement-0-snapshot") &&
			strings.Contains(out, "kubernetes-fleet.io/is-latest-snapshot=true") &&
			strings.Contains(out, "kubernetes-fleet.io/resource-index=0") &&
			strings.Contains(out, "kubernetes-fleet.io/parent-CRP=example-placement") &&
			strings.Contains(out, "gitfleet.io/commit=")
	})
	t.Logf("kubectl get clusterresourcesnapshots --show-labels:\n%s", out)
	if first := r.git("rev-list", "--max-parents=0", "HEAD"); !strings.Contains(out, "gitfleet.io/commit="+first) {
		t.Errorf("kubectl get clusterresourcesnapshots --show-labels:\n%s\nwant the label gitfleet.io/commit=%s, the commit snapshot 0 was rendered from", out, first)
	}

	eventually(t, "the run to wait for the canary approval on the hub", func() bool {
		_, err := k.try("get", "clusterapprovalrequests", "example-run-after-canary")
		return err == nil
	})
	header := strings.Fields(strings.SplitN(k.run("get", "clusterstagedupdaterun"), "\n", 2)[0])
	want := []string{"NAME", "PLACEMENT", "RESOURCE-SNAPSHOT-INDEX", "POLICY-SNAPSHOT-INDEX", "INITIALIZED", "PROGRESSING", "SUCCEEDED", "AGE"}
	if strings.Join(header, " ") != strings.Join(want, " ") {
		t.Errorf("kubectl get clusterstagedupdaterun columns = %v; want KubeFleet's %v", header, want)
	}

	// The hub's API server goes away mid-run and comes back: the
	// informers resync and the run goes on from where it stood.
	hubCluster.StopAPIServer()
	hubCluster.StartAPIServer()

	k.run("patch", "clusterapprovalrequests", "example-run-after-canary", "--type=merge", "--subresource=status", "-p",
		`{"status":{"conditions":[{"type":"Approved","status":"True","reason":"testPassed","message":"approved","lastTransitionTime":"2026-11-24T00:00:00Z","observedGeneration":1}]}}`)
	eventually(t, "the run to succeed on the hub", func() bool {
		out, _ := k.try("get", "clusterstagedupdaterun", "example-run", "-o", "jsonpath={.status.conditions[?(@.type==\"Succeeded\")].status}")
		return out == "True"
	})
	const path = "status/runs/example-run.yaml"
	eventually(t, "the finished run in Git", func() bool {
		run := runOnce(t, r, path)
		return run != nil && run.Phase() == fleet.PhaseSucceeded
	})
	eventually(t, "the approval given on the hub to be in approvals/ in Git", func() bool {
		a := r.approval("example-run-after-canary")
		if a == nil {
			return false
		}
		c := meta.FindStatusCondition(a.Status.Conditions, fleet.ApprovalRequestConditionApproved)
		return c != nil && c.Status == "True" && c.Reason == "testPassed"
	})

	// status/ holds what the hub holds, encoded as the embedded hub
	// encodes its objects.
	eventually(t, "the run's status file to equal the hub's run", func() bool {
		var onHub fleet.UpdateRun
		// At the stored version: kubectl prefers v1, which the CRDs serve
		// too, as KubeFleet's do; gitfleet's status files are v1beta1.
		if err := json.Unmarshal([]byte(k.run("get", "clusterstagedupdateruns.v1beta1.placement.kubernetes-fleet.io", "example-run", "-o", "json")), &onHub); err != nil {
			t.Fatal(err)
		}
		onHub.UID, onHub.ManagedFields = "", nil
		want, err := status.Encode(&onHub)
		if err != nil {
			t.Fatal(err)
		}
		return string(r.file(path)) == string(want)
	})

	// A change the API server's admission would refuse is not applied; the
	// reason lands in the run's status file in Git, as with the embedded
	// hub.
	immutable := strings.Replace(string(files["run.yaml"]), "placementName: example-placement", "placementName: another-placement", 1)
	r.commit("move the run", map[string][]byte{"run.yaml": []byte(immutable)})
	eventually(t, "the refusal in the run's status file", func() bool {
		run := runOnce(t, r, path)
		return run != nil && strings.Contains(run.Annotations[fleet.RejectedChangeAnnotation], "placementName is immutable")
	})
	if got := strings.TrimSpace(k.run("get", "clusterstagedupdaterun", "example-run", "-o", "jsonpath={.spec.placementName}")); got != "example-placement" {
		t.Errorf("the refused placementName reached the hub: %q", got)
	}

	// A run removed from Git is deleted from the hub (the engine finishes
	// the deletion) and from status/.
	r.commit("remove the run", map[string][]byte{"run.yaml": nil})
	eventually(t, "the run to be gone from the hub", func() bool {
		out, err := k.try("get", "clusterstagedupdaterun", "example-run")
		return err != nil && strings.Contains(out, "NotFound")
	})
	eventually(t, "the run's status file to be gone from Git", func() bool { return r.file(path) == nil })
}

// runOnce reads the run at path from the remote once (r.run reads it twice,
// and a push in between may make the second read miss), nil when absent.
func runOnce(t testing.TB, r *fleetRepo, path string) *fleet.UpdateRun {
	data := r.file(path)
	if data == nil {
		return nil
	}
	obj, err := status.DecodeFile(path, data)
	if err != nil {
		t.Fatalf("decoding %s: %v", path, err)
	}
	return obj.(*fleet.UpdateRun)
}

// TestApprovalsGivenWhileServeIsDownCountOnAKubernetesHub: an approval
// given on either side while no `serve --hub kube` runs counts once serve
// is back, and reaches the other side. The canary stage's before-stage
// approval is merged in Git while serve is down (the hub's record still
// says nothing: Git must win), its after-stage approval is given with
// kubectl on the hub while serve is down again (the file in Git is still
// what gitfleet wrote: the hub must win).
func TestApprovalsGivenWhileServeIsDownCountOnAKubernetesHub(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a kube-apiserver and gitfleet serve")
	}
	k, _ := startKubeHub(t)
	files := quickstartFleet(t)
	files["strategy.yaml"] = kubeconfigFleet(t)["strategy.yaml"] // an approval before the canary stage too
	r := newFleetRepo(t, files)
	args := serveOnKubeHub(r, k, t.TempDir())
	approvedOnHub := func(name string) string {
		out, _ := k.try("get", "clusterapprovalrequests", name, "-o", `jsonpath={.status.conditions[?(@.type=="Approved")].reason}`)
		return out
	}
	approvedInGit := func(name string) string {
		a := r.approval(name)
		if a == nil {
			return ""
		}
		if c := meta.FindStatusCondition(a.Status.Conditions, fleet.ApprovalRequestConditionApproved); c != nil && c.Status == "True" {
			return c.Reason
		}
		return ""
	}

	serve := startServe(t, args...)
	eventually(t, "the before-canary approval request in Git", func() bool { return r.approval("example-run-before-canary") != nil })
	serve.kill()
	r.approve("example-run-before-canary") // what `gitfleet approve` writes: reason ClusterApprovalRequestApproved
	const fromGit = fleet.ClusterApprovalRequestApprovedReason

	serve = startServe(t, args...)
	eventually(t, "the approval merged while serve was down on the hub", func() bool {
		return approvedOnHub("example-run-before-canary") == fromGit
	})
	eventually(t, "the after-canary approval request in Git (the canary stage ran)", func() bool {
		return r.approval("example-run-after-canary") != nil
	})
	serve.kill()
	k.run("patch", "clusterapprovalrequests", "example-run-after-canary", "--type=merge", "--subresource=status", "-p",
		`{"status":{"conditions":[{"type":"Approved","status":"True","reason":"testPassed","message":"approved","lastTransitionTime":"2026-11-24T00:00:00Z","observedGeneration":1}]}}`)

	startServe(t, args...)
	r.waitPhase("example-run", fleet.PhaseSucceeded)
	eventually(t, "the approval given on the hub while serve was down in Git", func() bool {
		return approvedInGit("example-run-after-canary") == "testPassed"
	})
	if got := approvedInGit("example-run-before-canary"); got != fromGit {
		t.Errorf("approvals/example-run-before-canary.yaml in Git has Approved reason %q; want the merged %q", got, fromGit)
	}
	if got := approvedOnHub("example-run-after-canary"); got != "testPassed" {
		t.Errorf("the hub's example-run-after-canary has Approved reason %q; want kubectl's testPassed", got)
	}
}

// TestServeOnAKubernetesHubDeliversToRealMembers: with `serve --hub
// kube`, kubeconfig:<context> members on real API servers receive the
// workload with a ClusterResourceOverride and a ResourceOverride applied
// per member, and the run succeeds. member2 starts simulated; once its driver becomes
// kubeconfig:member2 in Git, the hub delivers its binding again, without a
// new run, as the embedded hub does.
func TestServeOnAKubernetesHubDeliversToRealMembers(t *testing.T) {
	if testing.Short() {
		t.Skip("starts kube-apiservers and gitfleet serve")
	}
	k, clusters := startKubeHub(t, "member1", "member2")
	member1, member2 := clusters[1], clusters[2]
	files := oneStageFleet(2)
	real := string(files["members.yaml"])
	files["members.yaml"] = []byte(strings.Replace(real, `"kubeconfig:member2"`, "simulated", 1))
	files["overrides.yaml"] = []byte(`apiVersion: placement.kubernetes-fleet.io/v1beta1
kind: ClusterResourceOverride
metadata: {name: namespace-member}
spec:
  placement: {name: example-placement}
  clusterResourceSelectors: [{group: "", kind: Namespace, name: test-namespace, version: v1}]
  policy:
    overrideRules:
    - clusterSelector: {clusterSelectorTerms: []}
      jsonPatchOverrides:
      - {op: add, path: /metadata/labels, value: {member: "${MEMBER-CLUSTER-NAME}"}}
---
apiVersion: placement.kubernetes-fleet.io/v1beta1
kind: ResourceOverride
metadata: {name: cm-per-member, namespace: test-namespace}
spec:
  placement: {name: example-placement}
  resourceSelectors: [{group: "", kind: ConfigMap, name: test-cm, version: v1}]
  policy:
    overrideRules:
    - clusterSelector: {clusterSelectorTerms: []}
      jsonPatchOverrides:
      - {op: replace, path: /data/key, value: "value0-on-${MEMBER-CLUSTER-NAME}"}
`)
	// The ResourceOverride's snapshots live in its namespace on the hub,
	// which people create there (README, --hub kube).
	k.run("create", "namespace", "test-namespace")
	files["run.yaml"] = runNamed("example-run")
	r := newFleetRepo(t, files)
	startServe(t, serveOnKubeHub(r, k, t.TempDir())...)

	overridden := func(c *kubetest.Cluster) string {
		ns := c.Get("v1", "Namespace", "", "test-namespace")
		if ns == nil {
			return ""
		}
		return ns.GetLabels()["member"]
	}
	r.waitPhase("example-run", fleet.PhaseSucceeded)
	if v, o := member1.ConfigMapValue("test-namespace", "test-cm", "key"), overridden(member1); v != "value0-on-member1" || o != "member1" {
		t.Errorf("member1 has test-cm %q and namespace label member=%q; want value0-on-member1 and member1", v, o)
	}
	if v := member2.ConfigMapValue("test-namespace", "test-cm", "key"); v != "" {
		t.Errorf("member2 is simulated, but its API server has test-cm %q", v)
	}

	r.commit("member2 is a real cluster now", map[string][]byte{"members.yaml": []byte(real)})
	eventually(t, "member2 to receive the workload, overridden, once its driver is kubeconfig:member2", func() bool {
		return member2.ConfigMapValue("test-namespace", "test-cm", "key") == "value0-on-member2" && overridden(member2) == "member2"
	})
}
