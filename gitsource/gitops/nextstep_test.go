package gitops_test

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"

	fleet "github.com/gitfleet/gitfleet/api/v1beta1"
	"github.com/gitfleet/gitfleet/gitsource/gitops"
)

// A start or sync that fails on the hub's API server points at the hub,
// not at the Git remote.
func TestNextStepOfAHubErrorNamesTheHub(t *testing.T) {
	err := fmt.Errorf("recording snapshots: %w", apierrors.NewForbidden(schema.GroupResource{Group: fleet.PlacementGroup, Resource: "resourcesnapshots"}, "p-0", errors.New("RBAC")))
	if got := gitops.NextStep(err); !strings.Contains(got, "the hub's API server answered this") {
		t.Errorf("NextStep(%v) = %q; want it to name the hub", err, got)
	}
	if got := gitops.NextStep(errors.New("dial tcp: connection refused")); !strings.Contains(got, "remote is reachable") {
		t.Errorf("NextStep of a network error = %q; want the remote's check", got)
	}
}
