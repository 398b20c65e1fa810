package render

import (
	"encoding/json"
	"fmt"
	"runtime"
	"testing"
	"testing/fstest"

	"github.com/gitfleet/gitfleet/internal/testing/fleettest"
)

// BenchmarkRenderFleetObjects reads 10,000 MemberClusters or placements
// as serve, validate and the Git side of a Kubernetes hub read them:
// decoded, defaulted and validated (config/crd's schemas, then gitfleet's
// checks).
func BenchmarkRenderFleetObjects(b *testing.B) {
	for _, tc := range []struct {
		name       string
		placements bool
	}{{"10000-memberclusters", false}, {"10000-placements", true}} {
		fsys := fleettest.Repo(10000, tc.placements)
		check := func(b *testing.B, c *Content, err error) {
			if err != nil || len(c.Errors) != 0 || len(c.Members)+len(c.Placements) != 10000 {
				b.Fatalf("err %v, %d members, %d placements, errors %v", err, len(c.Members), len(c.Placements), c.Errors[:min(3, len(c.Errors))])
			}
		}
		b.Run(tc.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				c, err := Render(fsys, Options{})
				check(b, c, err)
			}
		})
		// serve's case: the commit before had the same objects.
		b.Run(tc.name+"-accepted-before", func(b *testing.B) {
			before, err := Render(fsys, Options{})
			check(b, before, err)
			b.ReportAllocs()
			for b.Loop() {
				c, err := Render(fsys, Options{Accepted: before.Accepted})
				check(b, c, err)
			}
		})
	}
}

// TestDecodingInParallelKeepsTheOrder: a tree decoded on every processor
// gives the content and errors (lines included) of one decoded in order.
func TestDecodingInParallelKeepsTheOrder(t *testing.T) {
	fsys := fleettest.Repo(300, false)
	for name, data := range fleettest.Repo(300, true) {
		fsys["placements/"+name] = data
	}
	// Some refused objects, one a file, for the errors' order and lines.
	for i := range 5 {
		fsys[fmt.Sprintf("broken/b%d.yaml", i)] = &fstest.MapFile{Data: []byte(fmt.Sprintf(`apiVersion: placement.kubernetes-fleet.io/v1beta1
kind: ClusterResourcePlacement
metadata: {name: broken%d}
spec:
  resourceSelectors: [{group: "", version: v1, kind: Namespace, name: app}]
  policy: {placementType: PickAll, numberOfClusters: %d}
`, i, i))}
	}
	render := func(procs int) string {
		defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(procs))
		c, err := Render(fsys, Options{})
		if err != nil {
			t.Fatal(err)
		}
		if len(c.Members) != 300 || len(c.Placements) != 300 || len(c.Errors) != 5 {
			t.Fatalf("%d members, %d placements, %d errors", len(c.Members), len(c.Placements), len(c.Errors))
		}
		b, err := json.Marshal([]any{c.Members, c.Placements, c.Errors, c.Accepted})
		if err != nil {
			t.Fatal(err)
		}
		return string(b) + fmt.Sprint(c.Sources)
	}
	if inOrder, parallel := render(1), render(4); inOrder != parallel {
		t.Error("the content decoded in parallel differs from the content decoded in order")
	}
}
