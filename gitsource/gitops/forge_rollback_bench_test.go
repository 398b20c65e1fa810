package gitops

import (
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"

	fleet "github.com/gitfleet/gitfleet/api/v1beta1"
	"github.com/gitfleet/gitfleet/internal/testing/await"
	"github.com/gitfleet/gitfleet/internal/testing/kubetest"
	"github.com/gitfleet/gitfleet/reconciler/hub"
	"github.com/gitfleet/gitfleet/reconciler/hub/kube"
)

// countingBody counts the bytes read from a response body.
type countingBody struct {
	io.ReadCloser
	n *atomic.Int64
}

func (b countingBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	b.n.Add(int64(n))
	return n, err
}

// getBytes counts the bytes of the runs' GETs and LISTs (not the
// informers' watches) a kube hub reads from its API server.
type getBytes struct {
	next  http.RoundTripper
	bytes atomic.Int64
	gets  atomic.Int64
}

func (g *getBytes) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := g.next.RoundTrip(req)
	if err == nil && req.Method == http.MethodGet && req.URL.Query().Get("watch") != "true" &&
		strings.Contains(req.URL.Path, "stagedupdateruns") {
		g.gets.Add(1)
		resp.Body = countingBody{ReadCloser: resp.Body, n: &g.bytes}
	}
	return resp, err
}

// BenchmarkRollbackSearchOnAKubeHub is what the forge's rollback proposal
// of one failed run reads from a Kubernetes hub's API server (the
// supersession check and the target search) with 100 finished runs of
// 1,000 clusters (3 stages) of four placements on it: bytes and GETs of
// runs, and the time. The husks come from the hub's cache; a run read
// whole is a GET of 400 KB.
//
//	go test ./gitsource/gitops -run '^$' -bench RollbackSearchOnAKubeHub -benchtime 5x -timeout 45m
func BenchmarkRollbackSearchOnAKubeHub(b *testing.B) {
	const runs, placements, stages, perStage = 100, 4, 3, 334
	ctx := await.Context(b)
	c := kubetest.Start(b, "hub")[0]
	c.InstallCRDs(filepath.Join("..", "..", "config", "crd"))
	counter := &getBytes{}
	rc := &rest.Config{Host: c.Server, BearerToken: c.AdminToken, TLSClientConfig: rest.TLSClientConfig{Insecure: true},
		WrapTransport: func(rt http.RoundTripper) http.RoundTripper { counter.next = rt; return counter }}
	var h *kube.Hub
	await.Until(b, "the kube hub to start on the fleet CRDs", func() bool {
		var err error
		h, err = kube.New(ctx, kube.Config{Rest: rc, Log: slog.New(slog.DiscardHandler)})
		return err == nil
	})
	t0 := time.Now().Add(-time.Hour).Truncate(time.Second)
	status := func(index string, end int, succeeded metav1.ConditionStatus) fleet.UpdateRunStatus {
		at := metav1.NewTime(t0.Add(time.Duration(end) * time.Second))
		cond := func(typ string, st metav1.ConditionStatus) metav1.Condition {
			return metav1.Condition{Type: typ, Status: st, ObservedGeneration: 1, Reason: "Test", Message: "written by the benchmark", LastTransitionTime: at}
		}
		st := fleet.UpdateRunStatus{PolicySnapshotIndexUsed: "0", ResourceSnapshotIndexUsed: index, Conditions: []metav1.Condition{
			cond(fleet.StagedUpdateRunConditionInitialized, metav1.ConditionTrue), cond(fleet.StagedUpdateRunConditionSucceeded, succeeded)}}
		for s := range stages {
			stage := fleet.StageUpdatingStatus{StageName: fmt.Sprintf("stage-%d", s)}
			for i := range perStage {
				stage.Clusters = append(stage.Clusters, fleet.ClusterUpdatingStatus{ClusterName: fmt.Sprintf("member-%d-%03d", s, i),
					Conditions: []metav1.Condition{cond(fleet.ClusterUpdatingConditionStarted, metav1.ConditionTrue),
						cond(fleet.ClusterUpdatingConditionSucceeded, succeeded)}})
			}
			st.StagesStatus = append(st.StagesStatus, stage)
		}
		return st
	}
	finish := func(name, placement string, st fleet.UpdateRunStatus) {
		key := hub.Key{Name: name}
		if err := h.Apply(ctx, &fleet.UpdateRun{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: fleet.UpdateRunSpec{
			PlacementName: placement, StagedUpdateStrategyName: "strategy", ResourceSnapshotIndex: st.ResourceSnapshotIndexUsed, State: fleet.StateRun}}); err != nil {
			b.Fatal(err)
		}
		var r *fleet.UpdateRun
		await.Until(b, "run "+name+" in the hub's cache", func() bool {
			var err error
			r, err = h.GetUpdateRun(ctx, key)
			return err == nil
		})
		r.Status = st
		if err := h.UpdateUpdateRunStatus(ctx, r); err != nil {
			b.Fatal(err)
		}
		await.Until(b, "run "+name+" a husk in the hub's cache", func() bool {
			r, err := h.GetUpdateRunWithoutClusters(ctx, key)
			return err == nil && len(r.Status.StagesStatus) == stages && len(r.Status.StagesStatus[0].Clusters) == 0
		})
	}
	for i := 0; i < runs; i += placements { // the snapshots of app-0's runs
		s := snapshot(fmt.Sprint(i), "", 1, "c", `{"apiVersion":"v1","kind":"Namespace","metadata":{"name":"app"}}`)
		s.Name = fmt.Sprintf("app-0-%d-snapshot", i)
		s.Labels[fleet.PlacementTrackingLabel] = "app-0"
		if err := h.CreateResourceSnapshot(ctx, s); err != nil {
			b.Fatal(err)
		}
	}
	for i := range runs {
		finish(fmt.Sprintf("run-%03d", i), fmt.Sprintf("app-%d", i%placements), status(fmt.Sprint(i), i, metav1.ConditionTrue))
	}
	finish("failed", "app-0", status(fmt.Sprint(runs), runs, metav1.ConditionFalse))

	d := &Daemon{forge: &forgeSync{hub: h}, log: slog.New(slog.DiscardHandler)}
	key := hub.Key{Name: "failed"}
	counter.bytes.Store(0)
	counter.gets.Store(0)
	for b.Loop() {
		failed, err := h.GetUpdateRunWithoutClusters(ctx, key)
		if err != nil {
			b.Fatal(err)
		}
		if later, err := d.supersededBy(ctx, failed); err != nil || later != "" {
			b.Fatalf("superseded by %q, %v; want neither", later, err)
		}
		t, err := d.rollbackTarget(ctx, failed)
		if err != nil || t.From != fmt.Sprintf("run-%03d", runs-placements) {
			b.Fatalf("target %+v, %v; want the last success of app-0", t, err)
		}
	}
	b.ReportMetric(float64(counter.bytes.Load())/float64(b.N)/(1<<20), "MiB-read/op")
	b.ReportMetric(float64(counter.gets.Load())/float64(b.N), "run-GETs/op")
}
