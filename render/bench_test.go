package render

import (
	"fmt"
	"strings"
	"testing"
	"testing/fstest"

	"k8s.io/apimachinery/pkg/api/equality"

	fleet "github.com/gitfleet/gitfleet/api/v1beta1"
)

// generatedRepo is a fleet repository with n workload resources in 10
// namespaces (a Deployment and a ConfigMap per app, one file each), the
// demo's fleet objects, and optionally a kustomization listing every file.
func generatedRepo(n int, kustomize bool) fstest.MapFS {
	fsys := fstest.MapFS{}
	var files []string
	add := func(name, data string) {
		fsys[name] = &fstest.MapFile{Data: []byte(data)}
		files = append(files, name)
	}
	for ns := 0; ns < 10; ns++ {
		add(fmt.Sprintf("apps/ns%d/namespace.yaml", ns), fmt.Sprintf("apiVersion: v1\nkind: Namespace\nmetadata:\n  name: ns%d\n  labels: {team: t%d}\n", ns, ns%3))
	}
	for i := 0; i < n-10; i++ {
		ns := i % 10
		if i%2 == 0 {
			add(fmt.Sprintf("apps/ns%d/app%d-cm.yaml", ns, i), fmt.Sprintf(`apiVersion: v1
kind: ConfigMap
metadata:
  name: app%d
  namespace: ns%d
  labels: {app: app%d}
data:
  key: value%d
  config.yaml: |
    replicas: 3
    image: registry.example.com/app:%d
`, i, ns, i, i, i))
			continue
		}
		add(fmt.Sprintf("apps/ns%d/app%d-deploy.yaml", ns, i), fmt.Sprintf(`apiVersion: apps/v1
kind: Deployment
metadata:
  name: app%d
  namespace: ns%d
  labels: {app: app%d}
spec:
  replicas: 3
  selector:
    matchLabels: {app: app%d}
  template:
    metadata:
      labels: {app: app%d}
    spec:
      containers:
        - name: app
          image: registry.example.com/app:%d
          ports: [{containerPort: 8080}]
          resources:
            requests: {cpu: 100m, memory: 128Mi}
`, i, ns, i, i, i, i))
	}
	for name, data := range map[string]string{
		"fleet/placement.yaml": `apiVersion: placement.kubernetes-fleet.io/v1beta1
kind: ClusterResourcePlacement
metadata: {name: apps}
spec:
  resourceSelectors: [{group: "", version: v1, kind: Namespace, labelSelector: {matchLabels: {team: t1}}}]
  strategy: {type: External}
`,
		"fleet/members.yaml": "apiVersion: cluster.kubernetes-fleet.io/v1beta1\nkind: MemberCluster\nmetadata: {name: member1}\n",
	} {
		add(name, data)
	}
	if kustomize {
		fsys["kustomization.yaml"] = &fstest.MapFile{Data: []byte("resources:\n  - " + strings.Join(files, "\n  - ") + "\n")}
	}
	return fsys
}

func BenchmarkRender(b *testing.B) {
	for _, layout := range []struct {
		name      string
		kustomize bool
	}{{"plain", false}, {"kustomize", true}} {
		b.Run(layout.name+"/1000-resources", func(b *testing.B) {
			fsys := generatedRepo(1000, layout.kustomize)
			b.ReportAllocs()
			for b.Loop() {
				c, err := Render(fsys, Options{})
				if err != nil || len(c.Resources) != 1000 || len(c.Errors) != 0 {
					b.Fatalf("err %v, %d resources, errors %v", err, len(c.Resources), c.Errors)
				}
			}
		})
	}
}

func BenchmarkSelect(b *testing.B) {
	c, err := Render(generatedRepo(1000, false), Options{})
	if err != nil {
		b.Fatal(err)
	}
	// Select everything: every Namespace, and with them all 1,000 resources.
	p := &fleet.Placement{Spec: fleet.PlacementSpec{ResourceSelectors: []fleet.ResourceSelectorTerm{{Version: "v1", Kind: "Namespace"}}}}
	b.ReportAllocs()
	for b.Loop() {
		sel, err := Select(p, c.Resources)
		if err != nil || len(sel) != 1000 {
			b.Fatalf("err %v, selected %d", err, len(sel))
		}
	}
}

// The generated repository is itself valid and renders identically in both
// layouts, so the benchmarks compare like with like.
func TestGeneratedRepoRendersTheSameInBothLayouts(t *testing.T) {
	plain, err := Render(generatedRepo(100, false), Options{})
	if err != nil {
		t.Fatal(err)
	}
	kust, err := Render(generatedRepo(100, true), Options{})
	if err != nil {
		t.Fatal(err)
	}
	if len(plain.Errors)+len(kust.Errors) != 0 || len(plain.Resources) != 100 {
		t.Fatalf("errors %v %v, %d resources", plain.Errors, kust.Errors, len(plain.Resources))
	}
	if len(kust.Resources) != len(plain.Resources) {
		t.Fatalf("%d resources plain, %d kustomized", len(plain.Resources), len(kust.Resources))
	}
	for i := range plain.Resources {
		if !equality.Semantic.DeepEqual(plain.Resources[i].Object, kust.Resources[i].Object) {
			t.Fatalf("first difference:\n%v\n%v", plain.Resources[i], kust.Resources[i])
		}
	}
}
