package kube

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"golang.org/x/sync/errgroup"
	authorizationv1 "k8s.io/api/authorization/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/gitfleet/gitfleet/internal/restlimits"
)

// KubeFleet's hub agent (its scheduler, rollout and update-run controllers)
// holds this leader election Lease while it runs: the name and namespace
// are the defaults of KubeFleet's hubagent (--leader-election-namespace,
// its LeaderElectionID).
const (
	KubeFleetLeaseNamespace = "fleet-system"
	KubeFleetLeaseName      = "136224848560.hub.fleet.azure.com"
)

// Check tells, before any informer starts, whether gitfleet can run on the
// hub behind rc: gitfleet's CRDs are served and KubeFleet's own hub agent
// is not at work there. New checks the same.
func Check(ctx context.Context, rc *rest.Config) error {
	rc = restlimits.Default(rc)
	if err := checkServed(rc); err != nil {
		return err
	}
	if err := checkAllowed(ctx, rc); err != nil {
		return err
	}
	return checkNoKubeFleet(ctx, rc, time.Now())
}

// hubVerbs are what the hub does to every kind it serves; statusVerbs to
// the status of those whose CRD has one.
var (
	hubVerbs    = []string{"get", "list", "watch", "create", "update", "patch", "delete"}
	statusVerbs = []string{"update", "patch"}
)

// checkAllowed asks the API server (SelfSubjectAccessReview) whether
// gitfleet's identity may do what the hub does, and names what it may not:
// without a list or watch an informer would wait for its cache forever,
// without a write a run would stop halfway.
func checkAllowed(ctx context.Context, rc *rest.Config) error {
	cs, err := kubernetes.NewForConfig(rc)
	if err != nil {
		return err
	}
	type question struct {
		gvr       schema.GroupVersionResource
		sub, verb string
		denied    bool
	}
	var questions []*question
	for _, kind := range slices.Sorted(maps.Keys(resources)) {
		for _, verb := range hubVerbs {
			questions = append(questions, &question{gvr: resources[kind], verb: verb})
		}
		if !statusless[kind] {
			for _, verb := range statusVerbs {
				questions = append(questions, &question{gvr: resources[kind], sub: "status", verb: verb})
			}
		}
	}
	// About 170 reviews: asked side by side, they take a round trip or two.
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(32)
	for _, q := range questions {
		g.Go(func() error {
			r, err := cs.AuthorizationV1().SelfSubjectAccessReviews().Create(gctx, &authorizationv1.SelfSubjectAccessReview{
				Spec: authorizationv1.SelfSubjectAccessReviewSpec{ResourceAttributes: &authorizationv1.ResourceAttributes{
					Group: q.gvr.Group, Version: q.gvr.Version, Resource: q.gvr.Resource, Subresource: q.sub, Verb: q.verb}}},
				metav1.CreateOptions{})
			if err != nil {
				return fmt.Errorf("asking the hub what gitfleet may do: %w", err)
			}
			q.denied = !r.Status.Allowed
			return nil
		})
	}
	if err := g.Wait(); err != nil {
		return err
	}
	var denied []string
	for i := 0; i < len(questions); {
		q := questions[i]
		what := q.gvr.Resource
		if q.sub != "" {
			what += "/" + q.sub
		}
		var no []string
		for ; i < len(questions) && questions[i].gvr == q.gvr && questions[i].sub == q.sub; i++ {
			if questions[i].denied {
				no = append(no, questions[i].verb)
			}
		}
		if len(no) > 0 {
			denied = append(denied, what+" ("+strings.Join(no, ", ")+")")
		}
	}
	if len(denied) > 0 {
		return fmt.Errorf("gitfleet may not use these resources of the hub as it must: %s; "+
			"grant them, as deploy/components/kube-hub/rbac.yaml does", strings.Join(denied, "; "))
	}
	return nil
}

// checkNoKubeFleet refuses a hub whose KubeFleet hub agent is at work: its
// Lease is held and was renewed within its lease duration. gitfleet's
// engine and KubeFleet's controllers would both write the runs' status and
// the bindings, each undoing the other. A Lease left behind by an agent
// that is gone (not renewed) does not count; one gitfleet may not read is
// reported, as the check could not be made.
func checkNoKubeFleet(ctx context.Context, rc *rest.Config, now time.Time) error {
	cs, err := kubernetes.NewForConfig(rc)
	if err != nil {
		return err
	}
	l, err := cs.CoordinationV1().Leases(KubeFleetLeaseNamespace).Get(ctx, KubeFleetLeaseName, metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
		return nil
	case err != nil:
		return fmt.Errorf("checking for KubeFleet's hub agent (Lease %s/%s): %w; gitfleet must not run beside it",
			KubeFleetLeaseNamespace, KubeFleetLeaseName, err)
	}
	holder, renewed, duration := "", time.Time{}, 15*time.Second
	if l.Spec.HolderIdentity != nil {
		holder = *l.Spec.HolderIdentity
	}
	if l.Spec.RenewTime != nil {
		renewed = l.Spec.RenewTime.Time
	}
	if l.Spec.LeaseDurationSeconds != nil {
		duration = time.Duration(*l.Spec.LeaseDurationSeconds) * time.Second
	}
	if holder == "" || now.Sub(renewed) > duration {
		return nil
	}
	return fmt.Errorf("KubeFleet's hub agent runs on this hub (%s holds Lease %s/%s, renewed %s ago): "+
		"its scheduler and update-run controllers would fight gitfleet's engine over the same objects; "+
		"uninstall the hub agent or use another hub cluster",
		holder, KubeFleetLeaseNamespace, KubeFleetLeaseName, now.Sub(renewed).Round(time.Second))
}
