package kube

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/gitfleet/gitfleet/reconciler/member"
)

// podPageSize is how many pods one list request brings; the pods of a
// large member come in pages.
const podPageSize = 500

var _ member.NodeObserver = (*Clusters)(nil)

// Observe reads the member's nodes and pods as KubeFleet's member agent
// does without a property provider (member.NodeObservation). KubeFleet
// counts only the first 100 pods (and warns); gitfleet pages through all
// of them.
func (c *Clusters) Observe(ctx context.Context, kubeconfigContext string) (member.Observation, error) {
	cl, err := c.cluster(kubeconfigContext)
	if err != nil {
		return member.Observation{}, err
	}
	o, err := cl.observe(ctx)
	if err != nil {
		return member.Observation{}, fmt.Errorf("kubeconfig context %q: %w", kubeconfigContext, err)
	}
	return o, nil
}

// Observe reads the member's nodes and pods, as Clusters.Observe does.
func (a *WorkApplier) Observe(ctx context.Context) (member.Observation, error) {
	return a.cl.observe(ctx)
}

func (cl *cluster) observe(ctx context.Context) (member.Observation, error) {
	var nodes corev1.NodeList
	if err := cl.client.List(ctx, &nodes); err != nil {
		return member.Observation{}, fmt.Errorf("list nodes: %w", cl.redact(err))
	}
	var pods []corev1.Pod
	for cont := ""; ; {
		var page corev1.PodList
		if err := cl.client.List(ctx, &page, client.Limit(podPageSize), client.Continue(cont)); err != nil {
			return member.Observation{}, fmt.Errorf("list pods: %w", cl.redact(err))
		}
		pods = append(pods, page.Items...)
		if cont = page.Continue; cont == "" {
			break
		}
	}
	return member.NodeObservation(nodes.Items, pods), nil
}
