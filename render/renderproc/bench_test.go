package renderproc_test

import (
	"context"
	"fmt"
	"io/fs"
	"os"
	"strings"
	"testing"
	"testing/fstest"

	"github.com/gitfleet/gitfleet/render"
	"github.com/gitfleet/gitfleet/render/renderproc"
)

// quickstart is examples/quickstart as serve sees a commit of it.
func quickstart(b *testing.B) fstest.MapFS {
	m := fstest.MapFS{}
	dir := os.DirFS("../../examples/quickstart")
	err := fs.WalkDir(dir, ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		data, err := fs.ReadFile(dir, p)
		m[p] = &fstest.MapFile{Data: data}
		return err
	})
	if err != nil {
		b.Fatal(err)
	}
	return m
}

// withMembers is the quickstart with n members more, one file each.
func withMembers(b *testing.B, n int) fstest.MapFS {
	m := quickstart(b)
	for i := range n {
		m[fmt.Sprintf("members/m%04d.yaml", i)] = &fstest.MapFile{Data: []byte(fmt.Sprintf(`apiVersion: cluster.kubernetes-fleet.io/v1beta1
kind: MemberCluster
metadata:
  name: m%04d
  labels: {environment: %s}
  annotations: {gitfleet.io/driver: simulated}
spec:
  identity: {kind: ServiceAccount, name: fleet-member-agent-m%04d, namespace: fleet-system}
`, i, []string{"canary", "prod"}[i%2], i))}
	}
	return m
}

// BenchmarkRender is the cost of a render's own process: in process
// (render.Render) against a worker (Render), on the quickstart and on a
// fleet of 1,000 members.
func BenchmarkRender(b *testing.B) {
	for _, tree := range []struct {
		name string
		fsys func(*testing.B) fstest.MapFS
	}{
		{"quickstart", quickstart},
		{"members-1000", func(b *testing.B) fstest.MapFS { return withMembers(b, 1000) }},
	} {
		fsys := tree.fsys(b)
		b.Run(tree.name+"/in-process", func(b *testing.B) {
			for b.Loop() {
				if _, err := render.Render(fsys, render.Options{}); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run(tree.name+"/worker", func(b *testing.B) {
			for b.Loop() {
				c, err := renderproc.Render(context.Background(), fsys, render.Options{}, renderproc.Limits{})
				if err != nil {
					b.Fatal(err)
				}
				if strings.Contains(tree.name, "1000") && len(c.Members) < 1000 {
					b.Fatalf("%d members", len(c.Members))
				}
			}
		})
	}
}
