package v1beta1

import (
	"testing"

	"k8s.io/apimachinery/pkg/util/validation/field"
)

// The CRD's transition rules are tested through internal/admission, with
// the API server's code; the webhook's rule is here.
func TestValidatePlacementUpdate(t *testing.T) {
	for _, tc := range []struct {
		name   string
		mutate func(old, cur *Placement)
		want   *want
	}{
		{"nil policy", func(old, _ *Placement) { old.Spec.Policy = nil }, nil},
		{"tolerations may be added", func(_, cur *Placement) { cur.Spec.Policy.Tolerations = []Toleration{{Key: "k"}} }, nil},
		{"tolerations may not be removed", func(old, _ *Placement) { old.Spec.Policy.Tolerations = []Toleration{{Key: "k"}} },
			&want{"spec.policy.tolerations", field.ErrorTypeInvalid, "tolerations have been updated/deleted, only additions to tolerations are allowed"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			old, cur := validPlacement(), validPlacement()
			tc.mutate(old, cur)
			errs := ValidatePlacementUpdate(old, cur)
			if tc.want == nil {
				if len(errs) != 0 {
					t.Fatalf("rejected: %v", errs)
				}
				return
			}
			checkOne(t, errs, *tc.want)
		})
	}
}
