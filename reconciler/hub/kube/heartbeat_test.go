package kube

import (
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// A member agent's heartbeat copied into its MemberCluster is no change
// the engine hears of; anything else in the status, or the object, is.
func TestOnlyAHeartbeatIsNotAMemberClusterChange(t *testing.T) {
	member := func(heartbeat, joined string, labels map[string]any) *unstructured.Unstructured {
		return &unstructured.Unstructured{Object: map[string]any{
			"metadata": map[string]any{"name": "m", "generation": int64(1), "labels": labels},
			"status": map[string]any{
				"conditions": []any{map[string]any{"type": "Joined", "status": joined}},
				"agentStatus": []any{map[string]any{"type": "MemberAgent", "lastReceivedHeartbeat": heartbeat,
					"conditions": []any{map[string]any{"type": "Joined", "status": joined}}}},
			},
		}}
	}
	was := member("2026-11-27T02:00:00Z", "True", nil)
	for _, tc := range []struct {
		name string
		now  *unstructured.Unstructured
		want bool
	}{
		{"a new heartbeat", member("2026-11-27T02:01:00Z", "True", nil), true},
		{"the same status", member("2026-11-27T02:00:00Z", "True", nil), true},
		{"a heartbeat and a condition", member("2026-11-27T02:01:00Z", "False", nil), false},
		{"a heartbeat and a label", member("2026-11-27T02:01:00Z", "True", map[string]any{"stage": "s1"}), false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := heartbeatOnly(was, tc.now); got != tc.want {
				t.Errorf("heartbeatOnly = %v, want %v", got, tc.want)
			}
		})
	}
	if heartbeatOnly(nil, was) {
		t.Error("a new member cluster is a change")
	}
}
