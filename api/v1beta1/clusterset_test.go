package v1beta1

import (
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
)

func TestValidateUpdateRunClusterSet(t *testing.T) {
	pct := intstr.FromString("10%")
	two := intstr.FromInt32(2)
	neg := intstr.FromInt32(-1)
	for _, tc := range []struct {
		name     string
		set      *ClusterSetPolicy
		retryOf  string
		wantErrs []string
	}{
		{"unset is KubeFleet's", nil, "", nil},
		{"freeze", &ClusterSetPolicy{WhenChanged: ClusterSetChangeFreeze}, "", nil},
		{"allow a percentage", &ClusterSetPolicy{Unmatched: UnmatchedClustersAllow, MaxUnmatched: &pct}, "other", nil},
		{"ignore", &ClusterSetPolicy{Unmatched: UnmatchedClustersIgnore}, "", nil},
		{"unknown whenChanged", &ClusterSetPolicy{WhenChanged: "Add"}, "", []string{`spec.clusterSet.whenChanged: Unsupported value: "Add"`}},
		{"unknown unmatched", &ClusterSetPolicy{Unmatched: "Drop"}, "", []string{`spec.clusterSet.unmatched: Unsupported value: "Drop"`}},
		{"allow without max", &ClusterSetPolicy{Unmatched: UnmatchedClustersAllow}, "", []string{"unmatched: Allow requires maxUnmatched"}},
		{"max without allow", &ClusterSetPolicy{Unmatched: UnmatchedClustersIgnore, MaxUnmatched: &two}, "", []string{"maxUnmatched is allowed only with unmatched: Allow"}},
		{"negative max", &ClusterSetPolicy{Unmatched: UnmatchedClustersAllow, MaxUnmatched: &neg}, "", []string{"must be a number >= 0 or a percentage"}},
		{"retry of itself", nil, "run", []string{"a run cannot retry itself"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := &UpdateRun{ObjectMeta: metav1.ObjectMeta{Name: "run"}, Spec: UpdateRunSpec{PlacementName: "p", StagedUpdateStrategyName: "s",
				ClusterSet: tc.set, RetryOf: tc.retryOf}}
			errs := ValidateUpdateRun(r)
			if len(errs) != len(tc.wantErrs) {
				t.Fatalf("errors %v, want %v", errs, tc.wantErrs)
			}
			for i, want := range tc.wantErrs {
				if !strings.Contains(errs[i].Error(), want) {
					t.Errorf("error %q does not contain %q", errs[i].Error(), want)
				}
			}
		})
	}
}
