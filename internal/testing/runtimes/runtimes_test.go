package runtimes

import (
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

func TestPercentileIsTheNearestRank(t *testing.T) {
	s := func(n ...int) []time.Duration {
		out := make([]time.Duration, len(n))
		for i, v := range n {
			out[i] = time.Duration(v) * time.Second
		}
		return out
	}
	for _, tc := range []struct {
		sorted []time.Duration
		p      int
		want   time.Duration
	}{
		{s(7), 50, 7 * time.Second},
		{s(1, 2), 50, time.Second},
		{s(1, 2, 3, 4, 5, 6, 7, 8, 9, 10), 90, 9 * time.Second},
		{s(1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11), 90, 10 * time.Second},
		{s(1, 2, 3), 0, time.Second},
		{s(1, 2, 3), 100, 3 * time.Second},
	} {
		if got := Percentile(tc.sorted, tc.p); got != tc.want {
			t.Errorf("Percentile(%v, %d) = %v, want %v", tc.sorted, tc.p, got, tc.want)
		}
	}
}

func TestRunsCountSucceededAndNameAFailure(t *testing.T) {
	run := func(name, status string) *unstructured.Unstructured {
		return &unstructured.Unstructured{Object: map[string]any{"metadata": map[string]any{"name": name},
			"status": map[string]any{"conditions": []any{map[string]any{"type": "Succeeded", "status": status, "reason": "R", "message": "m"}}}}}
	}
	r := New()
	r.Seen(run("a", "True"))
	r.Seen(run("b", "Unknown"))
	if n, failed := r.Finished([]string{"a", "b"}); n != 1 || failed != "" {
		t.Fatalf("Finished = %d, %q; want 1 succeeded, none failed", n, failed)
	}
	r.Seen(run("b", "False"))
	if _, failed := r.Finished([]string{"a", "b"}); failed != "run b failed: R: m" {
		t.Errorf("failure %q", failed)
	}
}
