package kube

import (
	"context"

	"k8s.io/apimachinery/pkg/labels"

	fleet "github.com/gitfleet/gitfleet/api/v1beta1"
	"github.com/gitfleet/gitfleet/reconciler/hub"
)

var _ hub.RolloutWindows = (*Hub)(nil)

// ListRolloutWindows implements hub.RolloutWindows: people's RolloutWindows
// (gitfleet.io, config/crd), which the Git loop applies as it applies
// their overrides, from the informer's cache, by name.
func (h *Hub) ListRolloutWindows(context.Context) ([]*fleet.RolloutWindow, error) {
	return list(h, fleet.KindRolloutWindow, "", true, labels.Everything(), func() *fleet.RolloutWindow { return &fleet.RolloutWindow{} })
}
