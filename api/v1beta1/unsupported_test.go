package v1beta1

import (
	"testing"

	"k8s.io/apimachinery/pkg/util/validation/field"
)

// TestUnsupportedValuesAreRefusedTheirDefaultsAccepted: the fields gitfleet
// does not act on are refused with a message that says so whenever they
// ask for something else than what gitfleet does; left out or at their
// defaults, they are accepted.
func TestUnsupportedValuesAreRefusedTheirDefaultsAccepted(t *testing.T) {
	mirror, original := ReportBackStrategyTypeMirror, ReportBackDestinationOriginalResource
	for _, tc := range []struct {
		name   string
		mutate func(*Placement)
		want   *want
	}{
		{"statusReportingScope NamespaceAccessible", func(p *Placement) { p.Spec.StatusReportingScope = NamespaceAccessible },
			&want{"spec.statusReportingScope", field.ErrorTypeInvalid, MsgStatusReportingScopeUnsupported}},
		{"statusReportingScope ClusterScopeOnly", func(p *Placement) { p.Spec.StatusReportingScope = ClusterScopeOnly }, nil},
		{"deleteStrategy Abandon", func(p *Placement) {
			p.Spec.Strategy.DeleteStrategy = &DeleteStrategy{PropagationPolicy: DeletePropagationPolicyAbandon}
		}, &want{"spec.strategy.deleteStrategy.propagationPolicy", field.ErrorTypeInvalid, MsgDeleteStrategyUnsupported}},
		{"deleteStrategy Delete", func(p *Placement) {
			p.Spec.Strategy.DeleteStrategy = &DeleteStrategy{PropagationPolicy: DeletePropagationPolicyDelete}
		}, nil},
		{"empty deleteStrategy", func(p *Placement) { p.Spec.Strategy.DeleteStrategy = &DeleteStrategy{} }, nil},
		{"reportBackStrategy Mirror", func(p *Placement) {
			p.Spec.Strategy.ReportBackStrategy = &ReportBackStrategy{Type: mirror, Destination: &original}
		}, &want{"spec.strategy.reportBackStrategy.type", field.ErrorTypeInvalid, MsgReportBackStrategyUnsupported}},
		{"reportBackStrategy Disabled", func(p *Placement) {
			p.Spec.Strategy.ReportBackStrategy = &ReportBackStrategy{Type: ReportBackStrategyTypeDisabled}
		}, nil},
		{"statusReportingScope outside the enum", func(p *Placement) { p.Spec.StatusReportingScope = "Unknown" },
			&want{"spec.statusReportingScope", field.ErrorTypeNotSupported, `supported values: "ClusterScopeOnly", "NamespaceAccessible"`}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := validPlacement()
			tc.mutate(p)
			errs := ValidatePlacement(p)
			if tc.want == nil {
				if len(errs) != 0 {
					t.Fatalf("refused: %v", errs)
				}
				SetDefaultsPlacement(p)
				if errs := ValidatePlacement(p); len(errs) != 0 {
					t.Fatalf("refused once defaulted: %v", errs)
				}
				return
			}
			checkOne(t, errs, *tc.want)
		})
	}
}
