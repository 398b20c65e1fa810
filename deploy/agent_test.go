package deploy

import (
	"context"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/kustomize/kyaml/filesys"
	"sigs.k8s.io/yaml"

	"github.com/gitfleet/gitfleet/internal/testing/await"
	"github.com/gitfleet/gitfleet/internal/testing/kubetest"
	"github.com/gitfleet/gitfleet/reconciler/membercluster"
)

// renderAgent renders deploy/agent from disk, what `kubectl apply -k
// deploy/agent/` applies on a member.
func renderAgent(t *testing.T) map[string]object {
	return render(t, filesys.MakeFsOnDisk(), filepath.Join(deployDir(t), "agent"))
}

func agentDeployment(t *testing.T, objs map[string]object) (deployment, container) {
	t.Helper()
	var d deployment
	mustGet(t, objs, "Deployment/gitfleet-agent").decode(t, &d)
	if len(d.Spec.Template.Spec.Containers) != 1 {
		t.Fatalf("containers %v, want the agent alone", d.Spec.Template.Spec.Containers)
	}
	return d, d.Spec.Template.Spec.Containers[0]
}

// The overlay: the agent's namespace, service account, its binding as the
// member's admin, the member name and one agent, running the daemon's
// image as the daemon runs it (non-root, read-only, nothing added).
func TestAgentOverlay(t *testing.T) {
	objs := renderAgent(t)
	want := []string{"ClusterRoleBinding/gitfleet-agent", "ConfigMap/gitfleet-agent", "Deployment/gitfleet-agent",
		"Namespace/gitfleet-system", "ServiceAccount/gitfleet-agent"}
	if got := sortedKeys(objs); !slices.Equal(got, want) {
		t.Fatalf("objects %v, want %v", got, want)
	}
	d, c := agentDeployment(t, objs)
	pod := d.Spec.Template.Spec
	checkSecurityContext(t, pod)
	if pod.ServiceAccountName != "gitfleet-agent" || pod.HostNetwork || pod.HostPID || pod.HostIPC {
		t.Errorf("pod: service account %q, host namespaces %v/%v/%v", pod.ServiceAccountName, pod.HostNetwork, pod.HostPID, pod.HostIPC)
	}
	_, daemon := gitfleetDeployment(t, renderBase(t))
	if c.Image != daemon.Image {
		t.Errorf("image %q, want the daemon's %q", c.Image, daemon.Image)
	}
	if len(c.Command) > 0 || len(c.Args) == 0 || c.Args[0] != "agent" {
		t.Fatalf("command %v args %v: want the agent subcommand as args", c.Command, c.Args)
	}
	defined := agentFlags(t)
	env := map[string]bool{}
	for _, e := range c.Env {
		env[e.Name] = true
		if r := e.ValueFrom; r != nil && r.ConfigMapKeyRef != nil {
			var cm struct {
				Data map[string]string `json:"data"`
			}
			mustGet(t, objs, "ConfigMap/"+r.ConfigMapKeyRef.Name).decode(t, &cm)
			if _, ok := cm.Data[r.ConfigMapKeyRef.Key]; !ok {
				t.Errorf("env %s: ConfigMap %s has no key %s", e.Name, r.ConfigMapKeyRef.Name, r.ConfigMapKeyRef.Key)
			}
		}
	}
	flags := map[string]string{}
	for _, a := range c.Args[1:] {
		m := regexp.MustCompile(`^--([a-z0-9-]+)=(.*)$`).FindStringSubmatch(a)
		if m == nil {
			t.Errorf("arg %q: want --flag=value", a)
			continue
		}
		flags[m[1]] = m[2]
		if !slices.Contains(defined, m[1]) {
			t.Errorf("flag --%s is not defined by cmd/gitfleet/agent.go (%v)", m[1], defined)
		}
		for _, ref := range regexp.MustCompile(`\$\(([A-Z_]+)\)`).FindAllStringSubmatch(m[2], -1) {
			if !env[ref[1]] {
				t.Errorf("arg %q refers to $(%s), which the container's env does not set", a, ref[1])
			}
		}
	}
	for _, f := range []string{"hub-kubeconfig", "member-name"} {
		if flags[f] == "" {
			t.Errorf("the agent is not given --%s", f)
		}
	}
	// The hub kubeconfig is the mounted Secret's key.
	var mounted bool
	for _, m := range c.VolumeMounts {
		if strings.HasPrefix(flags["hub-kubeconfig"], m.MountPath+"/") && m.ReadOnly {
			for _, v := range pod.Volumes {
				mounted = mounted || (v.Name == m.Name && v.Secret != nil && v.Secret.SecretName == "gitfleet-agent-hub")
			}
		}
	}
	if !mounted {
		t.Errorf("--hub-kubeconfig=%s is not read from the Secret gitfleet-agent-hub", flags["hub-kubeconfig"])
	}
	var dep struct {
		Spec struct {
			Replicas int `json:"replicas"`
			Strategy struct {
				Type string `json:"type"`
			} `json:"strategy"`
		} `json:"spec"`
	}
	mustGet(t, objs, "Deployment/gitfleet-agent").decode(t, &dep)
	if dep.Spec.Replicas != 1 || dep.Spec.Strategy.Type != "Recreate" {
		t.Errorf("replicas %d, strategy %s: one agent per member, never two at once", dep.Spec.Replicas, dep.Spec.Strategy.Type)
	}
}

// agentFlags are the flag names cmd/gitfleet/agent.go defines.
func agentFlags(t *testing.T) []string {
	b, err := os.ReadFile(filepath.Join("..", "cmd", "gitfleet", "agent.go"))
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, m := range regexp.MustCompile(`\bf\.\w+(?:Var)?P?\([^"\n]*"([a-z0-9-]+)"`).FindAllSubmatch(b, -1) {
		names = append(names, string(m[1]))
	}
	return names
}

// The rendered namespace, service account and binding, applied to a real
// member API server, let the agent's service account do what the agent
// does there: install the AppliedWork CRD, apply any kind in any
// namespace, read nodes and pods.
func TestAgentRBACOnARealAPIServer(t *testing.T) {
	m := kubetest.Start(t, "member")[0]
	objs := renderAgent(t)
	admin := m.Client()
	ctx := context.Background()
	for _, id := range []string{"Namespace/gitfleet-system", "ServiceAccount/gitfleet-agent", "ClusterRoleBinding/gitfleet-agent"} {
		u := &unstructured.Unstructured{}
		if err := yaml.Unmarshal(mustGet(t, objs, id).raw, &u.Object); err != nil {
			t.Fatal(err)
		}
		if err := admin.Create(ctx, u); err != nil {
			t.Fatalf("creating %s: %v", id, err)
		}
	}
	asAgent := &rest.Config{Host: m.Server, BearerToken: m.AdminToken, TLSClientConfig: rest.TLSClientConfig{Insecure: true},
		Impersonate: rest.ImpersonationConfig{UserName: "system:serviceaccount:gitfleet-system:gitfleet-agent"}}
	cl, err := client.New(asAgent, client.Options{})
	if err != nil {
		t.Fatal(err)
	}
	// The authorizer learns of the new binding from its watch: act as
	// the agent once it grants.
	cs := kubernetes.NewForConfigOrDie(asAgent)
	await.Until(t, "the agent's ClusterRoleBinding to grant", func() bool {
		_, err := cs.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
		return err == nil
	})
	crd := &unstructured.Unstructured{}
	b, err := os.ReadFile(filepath.Join("..", "config", "crd", "placement.kubernetes-fleet.io_appliedworks.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if err := yaml.Unmarshal(b, &crd.Object); err != nil {
		t.Fatal(err)
	}
	//nolint:staticcheck // client.Apply on unstructured, as the agent applies.
	if err := cl.Patch(ctx, crd, client.Apply, client.FieldOwner("gitfleet"), client.ForceOwnership); err != nil {
		t.Errorf("installing the AppliedWork CRD as the agent: %v", err)
	}
	for _, o := range []*unstructured.Unstructured{
		{Object: map[string]any{"apiVersion": "v1", "kind": "Namespace", "metadata": map[string]any{"name": "app"}}},
		{Object: map[string]any{"apiVersion": "v1", "kind": "ConfigMap", "metadata": map[string]any{"name": "one", "namespace": "app"}}},
		{Object: map[string]any{"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole", "metadata": map[string]any{"name": "app"}}},
	} {
		//nolint:staticcheck // client.Apply on unstructured, as the agent applies.
		if err := cl.Patch(ctx, o, client.Apply, client.FieldOwner("gitfleet"), client.ForceOwnership); err != nil {
			t.Errorf("applying %s %s as the agent: %v", o.GetKind(), o.GetName(), err)
		}
	}
	if _, err := cs.CoreV1().Nodes().List(ctx, metav1.ListOptions{}); err != nil {
		t.Errorf("listing nodes as the agent: %v", err)
	}
	if _, err := cs.CoreV1().Pods("").List(ctx, metav1.ListOptions{}); err != nil {
		t.Errorf("listing pods as the agent: %v", err)
	}
	// Without the binding it may do nothing: the binding is what grants it.
	if err := admin.Delete(ctx, &unstructured.Unstructured{Object: map[string]any{"apiVersion": "rbac.authorization.k8s.io/v1",
		"kind": "ClusterRoleBinding", "metadata": map[string]any{"name": "gitfleet-agent"}}}); err != nil {
		t.Fatal(err)
	}
	// The API server's authorizer learns of the deletion from its watch a
	// moment later: until then the binding still grants.
	await.Until(t, "listing pods without the binding to be Forbidden", func() bool {
		_, err = cs.CoreV1().Pods("").List(ctx, metav1.ListOptions{})
		return err != nil
	})
	if !apierrors.IsForbidden(err) {
		t.Errorf("listing pods without the binding: %v, want Forbidden", err)
	}
}

// With components/kube-hub, gitfleet's service account may do the hub side
// of a member that pulls: its namespace, the Role granting the member's
// identity the fleet groups there (escalate, bind), the RoleBinding and
// the InternalMemberCluster.
func TestKubeHubRBACServesMembersThatPull(t *testing.T) {
	cluster := kubetest.Start(t, "hub")[0]
	cluster.InstallCRDs(filepath.Join("..", "config", "crd"))
	objs := renderWithComponents(t, "kube-hub")
	admin := cluster.Client()
	ctx := await.Context(t)
	for _, id := range []string{"Namespace/" + namespace, "ServiceAccount/gitfleet", "ClusterRole/gitfleet-hub", "ClusterRoleBinding/gitfleet-hub"} {
		u := &unstructured.Unstructured{}
		if err := yaml.Unmarshal(mustGet(t, objs, id).raw, &u.Object); err != nil {
			t.Fatal(err)
		}
		if err := admin.Create(ctx, u); err != nil {
			t.Fatalf("creating %s: %v", id, err)
		}
	}
	asGitfleet := &rest.Config{Host: cluster.Server, BearerToken: cluster.AdminToken, TLSClientConfig: rest.TLSClientConfig{Insecure: true},
		Impersonate: rest.ImpersonationConfig{UserName: "system:serviceaccount:" + namespace + ":gitfleet"}}
	ctrl, err := membercluster.New(membercluster.Config{Rest: asGitfleet, Log: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	cctx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- ctrl.Run(cctx, 1) }()
	defer func() {
		cancel()
		<-done
	}()
	m := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "cluster.kubernetes-fleet.io/v1beta1", "kind": "MemberCluster",
		"metadata": map[string]any{"name": "m1", "annotations": map[string]any{"gitfleet.io/driver": membercluster.DriverWork}},
		"spec":     map[string]any{"identity": map[string]any{"kind": "ServiceAccount", "name": "agent", "namespace": "fleet-agents"}}}}
	if err := admin.Create(ctx, m); err != nil {
		t.Fatal(err)
	}
	await.Until(t, "the hub side of m1, written as gitfleet", func() bool {
		return cluster.Get("rbac.authorization.k8s.io/v1", "RoleBinding", "fleet-member-m1", "fleet-rolebinding-m1") != nil &&
			cluster.Get("cluster.kubernetes-fleet.io/v1beta1", "InternalMemberCluster", "fleet-member-m1", "m1") != nil
	})
}
