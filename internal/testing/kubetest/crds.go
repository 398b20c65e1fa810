package kubetest

import (
	"os"
	"path/filepath"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"github.com/gitfleet/gitfleet/internal/testing/await"
)

// InstallCRDs applies every CustomResourceDefinition file of dir (such as
// config/crd) as `kubectl apply --server-side -R -f dir` does and waits
// until each is Established, so that the API server serves its kind.
func (c *Cluster) InstallCRDs(dir string) {
	c.t.Helper()
	files, err := filepath.Glob(filepath.Join(dir, "*.yaml"))
	if err != nil || len(files) == 0 {
		c.t.Fatalf("no CRDs in %s: %v", dir, err)
	}
	cl := c.Client()
	ctx := await.Context(c.t)
	var names []string
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			c.t.Fatal(err)
		}
		u := &unstructured.Unstructured{}
		if err := yaml.Unmarshal(b, &u.Object); err != nil {
			c.t.Fatalf("%s: %v", f, err)
		}
		if err := cl.Patch(ctx, u, client.Apply, client.FieldOwner("kubectl"), client.ForceOwnership); err != nil {
			c.t.Fatalf("installing %s: %v", f, err)
		}
		names = append(names, u.GetName())
	}
	crd := schema.GroupVersionKind{Group: "apiextensions.k8s.io", Version: "v1", Kind: "CustomResourceDefinition"}
	for _, name := range names {
		await.Until(c.t, "CRD "+name+" to be established", func() bool {
			u := &unstructured.Unstructured{}
			u.SetGroupVersionKind(crd)
			if err := cl.Get(ctx, client.ObjectKey{Name: name}, u); err != nil {
				return false
			}
			conds, _, _ := unstructured.NestedSlice(u.Object, "status", "conditions")
			for _, cond := range conds {
				if m, ok := cond.(map[string]any); ok && m["type"] == "Established" && m["status"] == "True" {
					return true
				}
			}
			return false
		})
	}
}
