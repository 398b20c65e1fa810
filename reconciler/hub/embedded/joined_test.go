package embedded

import (
	"context"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	fleet "github.com/gitfleet/gitfleet/api/v1beta1"
	"github.com/gitfleet/gitfleet/internal/clock"
)

func TestMemberJoinedConditionFollowsTheDriverAnnotation(t *testing.T) {
	cases := []struct {
		driver string
		status metav1.ConditionStatus
		reason string
	}{
		{fleet.DriverSimulated, metav1.ConditionTrue, MemberClusterJoinedReason},
		{"", metav1.ConditionFalse, "DriverNotConfigured"},
		{"kubeconfig:prod", metav1.ConditionTrue, MemberClusterJoinedReason},
		{"carrier-pigeon", metav1.ConditionFalse, "DriverNotConfigured"},
	}
	for _, tc := range cases {
		t.Run("driver="+tc.driver, func(t *testing.T) {
			h := New(clock.NewFake(time.Unix(0, 0)), nil)
			m := &fleet.MemberCluster{ObjectMeta: metav1.ObjectMeta{Name: "member1"}}
			if tc.driver != "" {
				m.Annotations = map[string]string{fleet.DriverAnnotation: tc.driver}
			}
			h.ApplyMemberCluster(m)
			got, _ := h.GetMemberCluster(context.Background(), "member1")
			c := meta.FindStatusCondition(got.Status.Conditions, MemberClusterConditionJoined)
			if c == nil || c.Status != tc.status || c.Reason != tc.reason {
				t.Fatalf("Joined = %+v, want %s/%s", c, tc.status, tc.reason)
			}
		})
	}
}

func TestMemberJoinedKeepsItsTransitionTimeWhenLabelsChange(t *testing.T) {
	clk := clock.NewFake(time.Unix(0, 0))
	h := New(clk, nil)
	m := &fleet.MemberCluster{ObjectMeta: metav1.ObjectMeta{Name: "member1",
		Annotations: map[string]string{fleet.DriverAnnotation: fleet.DriverSimulated}}}
	h.ApplyMemberCluster(m.DeepCopy())
	clk.Advance(time.Hour)
	m.Labels = map[string]string{"environment": "canary"}
	h.ApplyMemberCluster(m)
	got, _ := h.GetMemberCluster(context.Background(), "member1")
	c := meta.FindStatusCondition(got.Status.Conditions, MemberClusterConditionJoined)
	if !c.LastTransitionTime.Time.Equal(time.Unix(0, 0)) {
		t.Errorf("Joined moved to %s on a label change", c.LastTransitionTime)
	}
}
