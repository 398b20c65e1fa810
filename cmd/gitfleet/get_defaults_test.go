package main

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	fleet "github.com/gitfleet/gitfleet/api/v1beta1"
	"github.com/gitfleet/gitfleet/internal/testing/kubetest"
	"github.com/gitfleet/gitfleet/render"
)

// TestGetShowsDefaultsAsKubectl: the quickstart's members, placement and
// run, applied to the embedded hub (a simulated rollout) and to a
// Kubernetes hub's API server with config/crd (as the Git side of a
// Kubernetes hub applies them), have the same defaulted spec in `gitfleet
// get -o yaml` and in what the API server stores, which `kubectl get -o
// yaml` shows.
func TestGetShowsDefaultsAsKubectl(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a kube-apiserver")
	}
	repo := demoRepo(t)
	hub := kubetest.Start(t, "hub")[0]
	hub.InstallCRDs(filepath.Join("..", "..", "config", "crd"))
	c := hub.Client()
	ctx := context.Background()

	content, err := render.Render(os.DirFS(repo), render.Options{})
	if err != nil {
		t.Fatal(err)
	}
	var objs []runtime.Object
	for _, o := range content.Members {
		objs = append(objs, o)
	}
	for _, o := range content.Placements {
		objs = append(objs, o)
	}
	for _, o := range content.Runs {
		objs = append(objs, o)
	}
	// get shows no strategies: the status tree keeps each run's frozen copy.
	if len(objs) < 3 {
		t.Fatalf("the quickstart rendered %d fleet objects", len(objs))
	}
	for _, o := range objs {
		info := fleet.MustKindFor(o)
		m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(o)
		if err != nil {
			t.Fatal(err)
		}
		u := &unstructured.Unstructured{Object: m}
		u.SetGroupVersionKind(info.GroupVersionKind)
		delete(u.Object, "status")
		if err := c.Create(ctx, u); err != nil {
			t.Fatalf("%s %s: %v", info.Kind, u.GetName(), err)
		}
		stored := &unstructured.Unstructured{}
		stored.SetGroupVersionKind(info.GroupVersionKind)
		if err := c.Get(ctx, client.ObjectKeyFromObject(u), stored); err != nil {
			t.Fatal(err)
		}

		out, errOut, code := gitfleet(t, "get", info.Plural, u.GetName(), "-o", "yaml", "--repo", repo)
		if code != 0 || errOut != "" {
			t.Fatalf("gitfleet get %s %s: exit %d, %s", info.Plural, u.GetName(), code, errOut)
		}
		var shown map[string]any
		if err := yaml.Unmarshal([]byte(out), &shown); err != nil {
			t.Fatal(err)
		}
		if got, want := jsonText(t, shown["spec"]), jsonText(t, stored.Object["spec"]); got != want {
			t.Errorf("%s %s: gitfleet get -o yaml shows the spec\n%s\nkube-apiserver stores\n%s", info.Kind, u.GetName(), got, want)
		}
	}
}

func jsonText(t *testing.T, v any) string {
	t.Helper()
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
