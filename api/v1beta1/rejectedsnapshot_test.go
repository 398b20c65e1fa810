package v1beta1

import (
	"strings"
	"testing"
)

// TestValidatePlacementRejectedSnapshots: a rejection annotation needs an
// index in its key and a reason as its value; the error names the field.
func TestValidatePlacementRejectedSnapshots(t *testing.T) {
	tests := []struct {
		annotations map[string]string
		want        string // "" = valid
	}{
		{map[string]string{"gitfleet.io/rejected-snapshot-3": "crash loop"}, ""},
		{map[string]string{"gitfleet.io/rejected-snapshot-0": "x", "other": ""}, ""},
		{map[string]string{"gitfleet.io/rejected-snapshot-x": "bad"},
			`metadata.annotations[gitfleet.io/rejected-snapshot-x]: Invalid value: "bad": the key must be gitfleet.io/rejected-snapshot-<index>`},
		{map[string]string{"gitfleet.io/rejected-snapshot-03": "bad"}, `not "03"`},
		{map[string]string{"gitfleet.io/rejected-snapshot--1": "bad"}, `not "-1"`},
		{map[string]string{"gitfleet.io/rejected-snapshot-2": ""},
			"metadata.annotations[gitfleet.io/rejected-snapshot-2]: Required value: the reason the resource snapshot is rejected"},
	}
	for _, tt := range tests {
		errs := validateRejectedSnapshots(tt.annotations)
		got := errs.ToAggregate()
		switch {
		case tt.want == "" && got != nil:
			t.Errorf("%v: %v", tt.annotations, got)
		case tt.want != "" && (got == nil || !strings.Contains(got.Error(), tt.want)):
			t.Errorf("%v: got %v, want %q", tt.annotations, got, tt.want)
		}
	}
	if got := RejectedSnapshots(map[string]string{"gitfleet.io/rejected-snapshot-3": " crash loop ", "gitfleet.io/rejected-snapshot-x": "y"}); len(got) != 1 || got["3"] != "crash loop" {
		t.Errorf("RejectedSnapshots = %v", got)
	}
}
