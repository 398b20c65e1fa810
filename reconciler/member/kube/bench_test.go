package kube

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/yaml"

	fleet "github.com/gitfleet/gitfleet/api/v1beta1"
	"github.com/gitfleet/gitfleet/internal/testing/kubetest"
	"github.com/gitfleet/gitfleet/reconciler/member"
)

// workload is n resources — ConfigMaps, Deployments and headless Services
// in equal parts — spread over 10 namespaces named <prefix>-0..9, as YAML
// documents (namespaces first).
func workload(prefix string, n int) []string {
	var docs []string
	for ns := range 10 {
		docs = append(docs, fmt.Sprintf("apiVersion: v1\nkind: Namespace\nmetadata: {name: %s-%d}", prefix, ns))
	}
	for i := range n - 10 {
		ns := fmt.Sprintf("%s-%d", prefix, i%10)
		switch i % 3 {
		case 0:
			docs = append(docs, fmt.Sprintf("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: cm-%d, namespace: %s}\ndata: {key: value-%d}", i, ns, i))
		case 1:
			docs = append(docs, fmt.Sprintf(`apiVersion: apps/v1
kind: Deployment
metadata: {name: web-%d, namespace: %s}
spec:
  replicas: 1
  selector: {matchLabels: {app: web-%d}}
  template:
    metadata: {labels: {app: web-%d}}
    spec: {containers: [{name: web, image: "registry.invalid/web:1"}]}`, i, ns, i, i))
		default:
			docs = append(docs, fmt.Sprintf(`apiVersion: v1
kind: Service
metadata: {name: svc-%d, namespace: %s}
spec: {clusterIP: None, selector: {app: web-%d}, ports: [{port: 80}]}`, i, ns, i))
		}
	}
	return docs
}

// benchDelivery is a delivery of docs for its own placement, so that one
// iteration's apply never prunes another's.
func benchDelivery(b *testing.B, placement string, docs []string) member.Delivery {
	b.Helper()
	bd := &fleet.Binding{ObjectMeta: metav1.ObjectMeta{Name: placement + "-member1", Generation: 1,
		Labels: map[string]string{fleet.PlacementTrackingLabel: placement}}}
	bd.Spec.TargetCluster = "member1"
	d := member.Delivery{Binding: bd}
	for _, doc := range docs {
		u := &unstructured.Unstructured{}
		if err := yaml.Unmarshal([]byte(doc), &u.Object); err != nil {
			b.Fatal(err)
		}
		d.Resources = append(d.Resources, u)
	}
	return d
}

// BenchmarkApply1000 puts 1,000 resources on one real API server, side by
// side: gitfleet's driver (the binding's Work applied as the workers
// apply it, with its status: Flux ssa's dry-run diff, then apply what
// changed, the prune, the records of Works it no longer has) and
// `kubectl apply --server-side` of the same objects. "first"
// creates them (fresh namespaces each iteration), "unchanged" applies the
// same objects again.
//
//	go test ./reconciler/member/kube -run '^$' -bench Apply1000 -benchtime 3x
func BenchmarkApply1000(b *testing.B) {
	clusters := kubetest.Start(b, "member1")
	kubeconfig := kubetest.Kubeconfig(b, clusters, nil)
	kubectl := filepath.Join(kubetest.Bin(b), "kubectl")
	c, err := Load(Options{Kubeconfig: kubeconfig})
	if err != nil {
		b.Fatal(err)
	}
	cl, err := c.cluster("member1")
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	gitfleetApply := func(b *testing.B, placement string, docs []string) {
		d := benchDelivery(b, placement, docs)
		w := &fleet.Work{ObjectMeta: metav1.ObjectMeta{Name: d.WorkName(), Generation: d.Generation(),
			Labels: map[string]string{fleet.ParentBindingLabel: d.Binding.Name, fleet.PlacementTrackingLabel: placement}}}
		for _, r := range d.Resources {
			w.Spec.Workload.Manifests = append(w.Spec.Workload.Manifests, fleet.Manifest{RawExtension: runtime.RawExtension{Object: r}})
		}
		d.Resources, d.Works = nil, []*fleet.Work{w}
		results, err := cl.applyWorks(ctx, d)
		if err != nil {
			b.Fatal(err)
		}
		if st, err := stateOf(results, false); err != nil || st == held {
			b.Fatalf("state %v: %v", st, err)
		}
	}
	kubectlApply := func(b *testing.B, _ string, docs []string) {
		file := filepath.Join(b.TempDir(), "workload.yaml")
		if err := os.WriteFile(file, []byte(strings.Join(docs, "\n---\n")), 0o644); err != nil {
			b.Fatal(err)
		}
		out, err := exec.Command(kubectl, "--kubeconfig", kubeconfig, "apply", "--server-side", "--field-manager", "kubectl-bench",
			"-f", file).CombinedOutput()
		if err != nil {
			b.Fatalf("kubectl apply: %v\n%s", err, out)
		}
	}
	for _, tool := range []struct {
		name  string
		apply func(b *testing.B, placement string, docs []string)
	}{{"gitfleet", gitfleetApply}, {"kubectl", kubectlApply}} {
		n := 0
		b.Run(tool.name+"/first", func(b *testing.B) {
			for b.Loop() {
				n++
				prefix := fmt.Sprintf("%s-first-%d", tool.name, n)
				tool.apply(b, prefix, workload(prefix, 1000))
			}
		})
		b.Run(tool.name+"/unchanged", func(b *testing.B) {
			prefix := tool.name + "-unchanged"
			docs := workload(prefix, 1000)
			tool.apply(b, prefix, docs)
			for b.Loop() {
				tool.apply(b, prefix, docs)
			}
		})
	}
}
