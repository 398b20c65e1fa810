package kubefleetinterop

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/gitfleet/gitfleet/internal/testing/await"
	"github.com/gitfleet/gitfleet/internal/testing/gittest"
	"github.com/gitfleet/gitfleet/internal/testing/kubetest"
	"github.com/gitfleet/gitfleet/internal/testing/testproc"
)

// TestKubeFleetMemberAgentJoinsAGitfleetHub is issue 25's item 3: the
// quickstart (examples/quickstart) pushed to Git, `gitfleet serve --hub
// kube` on a real hub, member1 declared pulled (gitfleet.io/driver: work)
// and running KubeFleet's own member agent, not gitfleet's; member2 and
// member3 stay simulated. gitfleet's hub side creates member1's namespace,
// RBAC and InternalMemberCluster, and the Work of its binding; KubeFleet's
// agent joins with the member's identity; the run, committed then, has
// member1's binding: the agent applies its Work and reports back, the
// binding turns Applied and Available, and the run, approved on the hub,
// succeeds.
func TestKubeFleetMemberAgentJoinsAGitfleetHub(t *testing.T) {
	src := kubefleetSource(t)
	bin := memberAgentBinary(t, src)
	gitfleet := gitfleetBinary(t)
	clusters := kubetest.Start(t, "hub", "member1")
	hub, member := clusters[0], clusters[1]
	installHubCRDs(t, hub)
	installMemberSideCRDs(t, src, member)

	ctx := await.Context(t)
	hubClient := hub.Client()
	remote := quickstartRepo(t, "member1")
	serve := startServe(t, gitfleet, "--repo", "file://"+remote, "--cache-dir", t.TempDir(),
		"--interval", "100ms", "--status-interval", "50ms", "--metrics-addr", "",
		"--hub", "kube", "--hub-kubeconfig", deployedServeKubeconfig(t, hub), "--hub-context", "gitfleet")
	// The hub side first, as a person installs the agent once the member
	// is on the hub: KubeFleet's agent gives its hub controllers up for
	// good (the process lives on, doing nothing) when their caches cannot
	// sync within two minutes, as when its identity may not list yet.
	until(t, serve, "member1's namespace, RoleBinding and InternalMemberCluster on the hub", func() bool {
		return get(ctx, hubClient, "rbac.authorization.k8s.io/v1", "RoleBinding", "fleet-member-member1", "fleet-rolebinding-member1") != nil &&
			get(ctx, hubClient, "cluster.kubernetes-fleet.io/v1beta1", "InternalMemberCluster", "fleet-member-member1", "member1") != nil
	})
	token := identityToken(t, hub, "fleet-system", "fleet-member-agent-member1")
	agent := startMemberAgent(t, bin, "member1", hub.Server, token, member)
	both := func(what string, cond func() bool) {
		t.Helper()
		if err := testproc.Wait(t, what, func(_ context.Context) bool { return cond() }, serve, agent); err != nil {
			t.Fatal(err)
		}
	}

	both("member1 to join through its InternalMemberCluster", func() bool {
		conds := agentConditions(get(ctx, hubClient, "cluster.kubernetes-fleet.io/v1beta1", "InternalMemberCluster", "fleet-member-member1", "member1"))
		return condition(conds, "Joined") == "True" && condition(conds, "Healthy") == "True"
	})
	pushRun(t, remote)
	both("the run to wait for the canary approval on the hub", func() bool {
		return get(ctx, hubClient, "placement.kubernetes-fleet.io/v1beta1", "ClusterApprovalRequest", "", "example-run-after-canary") != nil
	})
	both("the quickstart's objects on member1", func() bool {
		return member.Get("v1", "Namespace", "", "test-namespace") != nil &&
			member.ConfigMapValue("test-namespace", "test-cm", "key") == "value1"
	})
	both("member1's binding Applied and Available", func() bool {
		b := binding(t, hubClient, "example-placement", "member1")
		conds := conditions(b, "status", "conditions")
		return condition(conds, "Applied") == "True" && condition(conds, "Available") == "True"
	})
	if works := worksOf(t, hubClient, "fleet-member-member1"); len(works) == 0 {
		t.Error("no Work in fleet-member-member1 on the hub")
	} else {
		for _, w := range works {
			if aw := member.Get("placement.kubernetes-fleet.io/v1beta1", "AppliedWork", "", w.GetName()); aw == nil {
				t.Errorf("no AppliedWork %s on member1 for the hub's Work", w.GetName())
			}
		}
	}

	approve(t, hubClient, "example-run-after-canary")
	both("the run to succeed on the hub", func() bool {
		run := get(ctx, hubClient, "placement.kubernetes-fleet.io/v1beta1", "ClusterStagedUpdateRun", "", "example-run")
		return condition(conditions(run, "status", "conditions"), "Succeeded") == "True"
	})
	if got := stageClusterCondition(get(ctx, hubClient, "placement.kubernetes-fleet.io/v1beta1", "ClusterStagedUpdateRun", "", "example-run"), "canary", "member1", "Succeeded"); got != "True" {
		t.Errorf("the run's canary stage: member1 Succeeded=%q; want True", got)
	}
}

// kubeHubRBAC is what deploy/components/kube-hub grants serve on its hub.
var kubeHubRBAC = filepath.Join("..", "components", "kube-hub", "rbac.yaml")

// deployedServeKubeconfig reaches hub as serve does when deployed with
// deploy/components/kube-hub: as the service account gitfleet-system/
// gitfleet with that component's RBAC, not as an admin, so that what the
// hub side creates for KubeFleet's agent (namespaces, Roles and
// RoleBindings granting KubeFleet's rules) is within what gitfleet ships.
// The kubeconfig's context is named gitfleet.
func deployedServeKubeconfig(t *testing.T, hub *kubetest.Cluster) string {
	t.Helper()
	data, err := os.ReadFile(kubeHubRBAC)
	if err != nil {
		t.Fatal(err)
	}
	ctx := await.Context(t)
	cl := hub.Client()
	for _, obj := range splitYAML(t, string(data)) {
		if err := cl.Create(ctx, obj); err != nil {
			t.Fatalf("creating %s %s of %s on the hub: %v", obj.GetKind(), obj.GetName(), kubeHubRBAC, err)
		}
	}
	token := serviceAccountToken(t, hub, "gitfleet-system", "gitfleet")
	return kubetest.Kubeconfig(t, []*kubetest.Cluster{hub}, map[string][2]string{"gitfleet": {"hub", token}})
}

// quickstartRun is the quickstart's run file. quickstartRepo holds it back:
// a run initialized before its placement picked the pulled members (they
// are not eligible before their agents join, as with KubeFleet's
// scheduler) fails for good, "no scheduled or to-be-deleted bindings
// found", so a test commits it with pushRun once they joined, as a person
// creates a run once the members are in the fleet.
const quickstartRun = "run.yaml"

// quickstartRepo is a bare repository whose main holds examples/quickstart
// but its run, with the members named pulled (gitfleet.io/driver: work),
// the others simulated and available at once, and a 1s soak instead of a
// minute.
func quickstartRepo(t *testing.T, pulled ...string) string {
	t.Helper()
	gittest.Require(t, "git")
	root := t.TempDir()
	remote, work := filepath.Join(root, "fleet.git"), filepath.Join(root, "work")
	gittest.Must(t, root, "init", "-q", "--bare", "-b", "main", remote)
	gittest.Must(t, root, "clone", "-q", remote, work)
	gittest.Must(t, work, "checkout", "-q", "-b", "main")
	dir := filepath.Join("..", "..", "examples", "quickstart")
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if e.Name() == quickstartRun {
			continue
		}
		data, err := os.ReadFile(filepath.Join(dir, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		s := strings.ReplaceAll(string(data), "gitfleet.io/sim-available-after: 10s", "gitfleet.io/sim-available-after: 0s")
		s = strings.ReplaceAll(s, "waitTime: 1m", "waitTime: 1s")
		if e.Name() == "members.yaml" {
			for _, name := range pulled {
				s = pull(t, s, name)
			}
		}
		if err := os.WriteFile(filepath.Join(work, e.Name()), []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	gittest.Must(t, work, "add", ".")
	gittest.Must(t, work, "commit", "-q", "-m", "the quickstart, pulled: "+strings.Join(pulled, ", "))
	gittest.Must(t, work, "push", "-q", "origin", "HEAD:main")
	return remote
}

// pushRun commits the quickstart's run to remote's main.
func pushRun(t *testing.T, remote string) {
	t.Helper()
	run, err := os.ReadFile(filepath.Join("..", "..", "examples", "quickstart", quickstartRun))
	if err != nil {
		t.Fatal(err)
	}
	commitToMain(t, remote, "the quickstart's run", func(work string) {
		if err := os.WriteFile(filepath.Join(work, quickstartRun), run, 0o644); err != nil {
			t.Fatal(err)
		}
	})
}

// commitToMain commits what change does in a clone of remote and pushes
// it to main, rebased onto the status commits serve pushes meanwhile.
func commitToMain(t *testing.T, remote, message string, change func(work string)) {
	t.Helper()
	work := filepath.Join(t.TempDir(), "work")
	gittest.Must(t, filepath.Dir(work), "clone", "-q", remote, work)
	change(work)
	gittest.Must(t, work, "add", ".")
	gittest.Must(t, work, "config", "user.name", "test")
	gittest.Must(t, work, "config", "user.email", "test@example.com")
	gittest.Must(t, work, "commit", "-q", "-m", message)
	await.Until(t, "the commit to reach main", func() bool {
		for _, args := range [][]string{{"pull", "-q", "--rebase", "origin", "main"}, {"push", "-q", "origin", "HEAD:main"}} {
			cmd := exec.Command("git", args...)
			cmd.Dir = work
			if cmd.Run() != nil {
				return false
			}
		}
		return true
	})
}

// pull rewrites the MemberCluster name of members.yaml to be pulled: its
// driver annotation becomes work, its simulation annotations go.
func pull(t *testing.T, members, name string) string {
	t.Helper()
	docs := strings.Split(members, "\n---\n")
	found := false
	for i, doc := range docs {
		if !strings.Contains(doc, "\n  name: "+name+"\n") {
			continue
		}
		found = true
		var lines []string
		for _, l := range strings.Split(doc, "\n") {
			switch {
			case strings.Contains(l, "gitfleet.io/driver:"):
				l = "    gitfleet.io/driver: work"
			case strings.Contains(l, "gitfleet.io/sim-"):
				continue
			}
			lines = append(lines, l)
		}
		docs[i] = strings.Join(lines, "\n")
	}
	if !found {
		t.Fatalf("no MemberCluster %s in examples/quickstart/members.yaml", name)
	}
	return strings.Join(docs, "\n---\n")
}

// binding is the ClusterResourceBinding of placement for cluster on the
// hub, nil while there is none.
func binding(t *testing.T, cl client.Client, placement, cluster string) *unstructured.Unstructured {
	t.Helper()
	list := &unstructured.UnstructuredList{}
	list.SetAPIVersion("placement.kubernetes-fleet.io/v1beta1")
	list.SetKind("ClusterResourceBindingList")
	if err := cl.List(await.Context(t), list, client.MatchingLabels{"kubernetes-fleet.io/parent-CRP": placement}); err != nil {
		return nil
	}
	for i := range list.Items {
		if target, _, _ := unstructured.NestedString(list.Items[i].Object, "spec", "targetCluster"); target == cluster {
			return &list.Items[i]
		}
	}
	return nil
}

// worksOf lists the Works in namespace on the hub.
func worksOf(t *testing.T, cl client.Client, namespace string) []unstructured.Unstructured {
	t.Helper()
	list := &unstructured.UnstructuredList{}
	list.SetAPIVersion("placement.kubernetes-fleet.io/v1beta1")
	list.SetKind("WorkList")
	if err := cl.List(await.Context(t), list, client.InNamespace(namespace)); err != nil {
		t.Fatal(err)
	}
	return list.Items
}

// approve gives the Approved condition to a ClusterApprovalRequest on the
// hub, as `kubectl patch … --subresource=status` does in the README.
func approve(t *testing.T, cl client.Client, name string) {
	t.Helper()
	u := &unstructured.Unstructured{}
	u.SetAPIVersion("placement.kubernetes-fleet.io/v1beta1")
	u.SetKind("ClusterApprovalRequest")
	u.SetName(name)
	patch := []byte(`{"status":{"conditions":[{"type":"Approved","status":"True","reason":"testPassed","message":"approved","lastTransitionTime":"2026-11-24T00:00:00Z","observedGeneration":1}]}}`)
	if err := cl.Status().Patch(await.Context(t), u, client.RawPatch(types.MergePatchType, patch)); err != nil {
		t.Fatalf("approving %s on the hub: %v", name, err)
	}
}

// stageClusterCondition is the status of condition typ of cluster in
// stage of a run's status.
func stageClusterCondition(run *unstructured.Unstructured, stage, cluster, typ string) string {
	for _, s := range conditions(run, "status", "stagesStatus") {
		sm, _ := s.(map[string]any)
		if sm["stageName"] != stage {
			continue
		}
		clusters, _ := sm["clusters"].([]any)
		for _, c := range clusters {
			cm, _ := c.(map[string]any)
			if cm["clusterName"] == cluster {
				conds, _ := cm["conditions"].([]any)
				return condition(conds, typ)
			}
		}
	}
	return ""
}

// gitfleetBinary builds cmd/gitfleet into the test's temporary directory.
func gitfleetBinary(t *testing.T) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "gitfleet")
	cmd := exec.Command("go", "build", "-o", bin, "./cmd/gitfleet")
	cmd.Dir = filepath.Join("..", "..")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build ./cmd/gitfleet: %v\n%s", err, out)
	}
	return bin
}

// startServe runs `gitfleet serve` with args, its log shown when the test
// fails.
func startServe(t *testing.T, bin string, args ...string) *testproc.Server {
	t.Helper()
	cmd := exec.Command(bin, append([]string{"serve"}, args...)...)
	cmd.Env = append(os.Environ(), "GIT_CONFIG_GLOBAL=/dev/null")
	s, err := testproc.Start("gitfleet serve", cmd, filepath.Join(t.TempDir(), "serve.log"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("the end of gitfleet serve's log %s:\n%s", s.Log, s.Tail())
		}
		s.Kill()
	})
	return s
}
