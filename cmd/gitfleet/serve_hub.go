package main

import (
	"context"
	"fmt"
	"log/slog"

	"github.com/spf13/pflag"
	"k8s.io/client-go/rest"

	"github.com/gitfleet/gitfleet/internal/clock"
	"github.com/gitfleet/gitfleet/internal/leader"
	"github.com/gitfleet/gitfleet/reconciler/hub"
	kubehub "github.com/gitfleet/gitfleet/reconciler/hub/kube"
	"github.com/gitfleet/gitfleet/reconciler/member"
	"github.com/gitfleet/gitfleet/reconciler/membercluster"
	"github.com/gitfleet/gitfleet/render"
)

// The two hubs serve runs the engine on.
const (
	hubEmbedded = "embedded"
	hubKube     = "kube"
)

var _ hub.Loop = (*kubehub.Hub)(nil)

// hubOptions choose the hub: gitfleet's own (state in Git) or a Kubernetes
// API server (state in etcd, Git as the interface).
type hubOptions struct {
	kind, kubeconfig, context string
}

func (o *hubOptions) addFlags(f *pflag.FlagSet) {
	f.StringVar(&o.kind, "hub", hubEmbedded, "where the fleet state lives: embedded (gitfleet's memory, persisted in status/ in Git) or kube (a Kubernetes API server with gitfleet's CRDs, config/crd; status/ in Git mirrors it)")
	f.StringVar(&o.kubeconfig, "hub-kubeconfig", "", "kubeconfig of the hub cluster: the API server of --hub kube and the leader election Lease (default: the pod's service account in a cluster, else KUBECONFIG or ~/.kube/config)")
	f.StringVar(&o.context, "hub-context", "", "kubeconfig context of the hub cluster (default: the current context)")
}

func (o hubOptions) validate() error {
	switch o.kind {
	case hubEmbedded, hubKube:
		return nil
	}
	return fmt.Errorf("--hub %q: want %s or %s", o.kind, hubEmbedded, hubKube)
}

// restConfig reaches the hub cluster: the in-cluster service account when
// neither --hub-kubeconfig nor --hub-context is given and serve runs in a
// pod, else the kubeconfig as kubectl loads it.
func (o hubOptions) restConfig() (*rest.Config, error) {
	return leader.RESTConfig(o.kubeconfig, o.context)
}

// newHub is gitops.Config.NewHub for --hub: nil for the embedded hub (the
// default), else the kube hub on the hub cluster, delivering to members as
// the embedded hub does and mirroring itself into the status tree, with
// the hub side of the members that pull (reconciler/membercluster).
//
// The hub is checked first, so a hub serve cannot use (no CRDs, KubeFleet's
// hub agent at work) ends serve at once instead of being retried.
func (o hubOptions) newHub(ctx context.Context, log *slog.Logger) (func(context.Context, hub.Store, clock.Clock, member.Clusters) (hub.Loop, error), error) {
	if o.kind != hubKube {
		return nil, nil
	}
	rc, err := o.restConfig()
	if err != nil {
		return nil, err
	}
	if err := kubehub.Check(ctx, rc); err != nil {
		return nil, err
	}
	return func(ctx context.Context, store hub.Store, clk clock.Clock, clusters member.Clusters) (hub.Loop, error) {
		h, err := kubehub.New(ctx, kubehub.Config{Rest: rc, Select: render.Select, Store: store, Deliver: true,
			Clusters: clusters, Clock: clk, Log: log.With("component", "hub")})
		if err != nil {
			return nil, err
		}
		log.Info("the fleet state lives on the hub cluster", "server", rc.Host)
		// Members that pull (gitfleet.io/driver: work) get their namespace,
		// RBAC and InternalMemberCluster, and their agents' reports.
		members, err := membercluster.New(membercluster.Config{Rest: rc, Clock: clk, Log: log})
		if err != nil {
			return nil, err
		}
		go func() {
			if err := members.Run(ctx, 2); err != nil {
				log.Error("members that pull are not served", "err", err.Error())
			}
		}()
		return h, nil
	}, nil
}
