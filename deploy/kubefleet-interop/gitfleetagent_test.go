package kubefleetinterop

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gitfleet/gitfleet/internal/testing/await"
	"github.com/gitfleet/gitfleet/internal/testing/kubetest"
	"github.com/gitfleet/gitfleet/internal/testing/testproc"
)

// TestGitfleetAgentsPullTheQuickstart is `make run-clusters-pull`
// (hack/quickstart.sh --clusters-pull) as a test, with gitfleet's own
// agent on every member instead of KubeFleet's and without a KubeFleet
// source: a hub API server with gitfleet's CRDs and `gitfleet serve --hub
// kube` reaching it as deploy/components/kube-hub's service account; the
// quickstart's three members pulled, each a real API server running
// `gitfleet agent` as its MemberCluster's spec.identity (what the hub
// grants it: its namespace). Every member joins; the run, committed
// then (a run committed before its pulled members joined finds no
// binding and fails, as on KubeFleet: see quickstartRun), has all three:
// each member applies its Work, records its AppliedWork and reports back,
// and the run, approved on the hub, succeeds. A later commit adds a ConfigMap whose value is not a
// string: member2's API server refuses it, and its binding names it as a
// failed placement with the API server's message.
func TestGitfleetAgentsPullTheQuickstart(t *testing.T) {
	if testing.Short() {
		t.Skip("starts four kube-apiservers")
	}
	members := []string{"member1", "member2", "member3"}
	gitfleet := gitfleetBinary(t)
	clusters := kubetest.Start(t, append([]string{"hub"}, members...)...)
	hub := clusters[0]
	installHubCRDs(t, hub)
	ctx := await.Context(t)
	hubClient := hub.Client()
	remote := quickstartRepo(t, members...)
	serve := startServe(t, gitfleet, "--repo", "file://"+remote, "--cache-dir", t.TempDir(),
		"--interval", "100ms", "--status-interval", "50ms", "--metrics-addr", "",
		"--hub", "kube", "--hub-kubeconfig", deployedServeKubeconfig(t, hub), "--hub-context", "gitfleet")
	procs := []*testproc.Server{serve}
	for i, name := range members {
		until(t, serve, name+"'s RoleBinding on the hub", func() bool {
			return get(ctx, hubClient, "rbac.authorization.k8s.io/v1", "RoleBinding", "fleet-member-"+name, "fleet-rolebinding-"+name) != nil
		})
		token := serviceAccountToken(t, hub, "fleet-system", "fleet-member-agent-"+name)
		hubKubeconfig := kubetest.Kubeconfig(t, []*kubetest.Cluster{hub}, map[string][2]string{"identity": {"hub", token}})
		procs = append(procs, startAgent(t, gitfleet, name, hubKubeconfig, clusters[i+1]))
	}
	all := func(what string, cond func() bool) {
		t.Helper()
		if err := testproc.Wait(t, what, func(_ context.Context) bool { return cond() }, procs...); err != nil {
			t.Fatal(err)
		}
	}

	all("every member to join", func() bool {
		for _, name := range members {
			m := get(ctx, hubClient, "cluster.kubernetes-fleet.io/v1beta1", "MemberCluster", "", name)
			if condition(conditions(m, "status", "conditions"), "Joined") != "True" {
				return false
			}
		}
		return true
	})
	pushRun(t, remote)
	all("the run to wait for the canary approval on the hub", func() bool {
		return get(ctx, hubClient, "placement.kubernetes-fleet.io/v1beta1", "ClusterApprovalRequest", "", "example-run-after-canary") != nil
	})
	for i, name := range members {
		member := clusters[i+1]
		all("the quickstart's objects on "+name, func() bool {
			return member.ConfigMapValue("test-namespace", "test-cm", "key") == "value1"
		})
		works := worksOf(t, hubClient, "fleet-member-"+name)
		if len(works) != 1 {
			t.Fatalf("%s: %d Works on the hub, want 1", name, len(works))
		}
		all(name+"'s Work to report its manifests applied and available", func() bool {
			w := get(ctx, hubClient, "placement.kubernetes-fleet.io/v1beta1", "Work", "fleet-member-"+name, works[0].GetName())
			if condition(conditions(w, "status", "conditions"), "Available") != "True" {
				return false
			}
			manifests := conditions(w, "status", "manifestConditions")
			for _, mc := range manifests {
				conds, _ := mc.(map[string]any)["conditions"].([]any)
				if condition(conds, "Applied") != "True" || condition(conds, "Available") != "True" {
					return false
				}
			}
			return len(manifests) == 2
		})
		if member.Get("placement.kubernetes-fleet.io/v1beta1", "AppliedWork", "", works[0].GetName()) == nil {
			t.Errorf("no AppliedWork %s on %s", works[0].GetName(), name)
		}
	}
	approve(t, hubClient, "example-run-after-canary")
	all("the run to succeed on the hub", func() bool {
		run := get(ctx, hubClient, "placement.kubernetes-fleet.io/v1beta1", "ClusterStagedUpdateRun", "", "example-run")
		return condition(conditions(run, "status", "conditions"), "Succeeded") == "True"
	})

	// A ConfigMap whose value is a number: gitfleet takes it (validate
	// does too), the first member of the next run (member2, staging)
	// refuses it.
	commitToMain(t, remote, "a ConfigMap the members refuse", func(work string) {
		appendFile(t, filepath.Join(work, "workload.yaml"), "---\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: stray\n  namespace: test-namespace\ndata:\n  key: 1\n")
		run, err := os.ReadFile(filepath.Join(work, quickstartRun))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(work, "run-2.yaml"), []byte(strings.ReplaceAll(string(run), "name: example-run", "name: run-2")), 0o644); err != nil {
			t.Fatal(err)
		}
	})
	var message string
	all("member2's binding to name the refused ConfigMap with the API server's message", func() bool {
		b := binding(t, hubClient, "example-placement", "member2")
		for _, f := range conditions(b, "status", "failedPlacements") {
			fm, _ := f.(map[string]any)
			if fm["name"] == "stray" {
				c, _ := fm["condition"].(map[string]any)
				message = fmt.Sprint(c["message"])
				return c["status"] == "False" && c["type"] == "Applied"
			}
		}
		return false
	})
	if !strings.Contains(message, ".data.key: expected string") {
		t.Errorf("the failed placement's message %q does not carry the API server's", message)
	}
}

// startAgent runs `gitfleet agent` for member name, reaching the hub
// through hubKubeconfig's context identity and member as its admin.
func startAgent(t *testing.T, bin, name, hubKubeconfig string, member *kubetest.Cluster) *testproc.Server {
	t.Helper()
	cmd := exec.Command(bin, "agent", "--hub-kubeconfig", hubKubeconfig, "--hub-context", "identity", "--member-name", name,
		"--kubeconfig", kubetest.Kubeconfig(t, []*kubetest.Cluster{member}, nil))
	s, err := testproc.Start("gitfleet agent of "+name, cmd, filepath.Join(t.TempDir(), "agent-"+name+".log"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("the end of %s's log %s:\n%s", s.Name, s.Log, s.Tail())
		}
		s.Kill()
	})
	return s
}

func appendFile(t *testing.T, path, text string) {
	t.Helper()
	f, err := os.OpenFile(path, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteString(text); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
}
