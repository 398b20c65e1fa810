package gitops_test

import (
	"encoding/json"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/api/meta"

	fleet "github.com/gitfleet/gitfleet/api/v1beta1"
	"github.com/gitfleet/gitfleet/gitops"
	"github.com/gitfleet/gitfleet/internal/kubetest"
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
	hubCluster := kubetest.Start(t, "hub")[0]
	k := kubectl{t: t, bin: filepath.Join(kubetest.Bin(t), "kubectl"), kubeconfig: kubetest.Kubeconfig(t, []*kubetest.Cluster{hubCluster}, nil)}
	k.run("apply", "--server-side", "-R", "-f", filepath.Join("..", "config", "crd"))
	k.run("wait", "--for", "condition=established", "crd", "--all", "--timeout", "5m")

	files := quickstartFleet(t)
	r := newFleetRepo(t, files)
	startServe(t, "--repo", "file://"+r.remote, "--cache-dir", t.TempDir(), "--interval", "100ms",
		"--status-interval", "50ms", "--metrics-addr", "",
		"--hub", "kube", "--hub-kubeconfig", k.kubeconfig, "--hub-context", "hub")

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
		if err := json.Unmarshal([]byte(k.run("get", "clusterstagedupdaterun", "example-run", "-o", "json")), &onHub); err != nil {
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
		return run != nil && strings.Contains(run.Annotations[gitops.RejectedChangeAnnotation], "placementName is immutable")
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
