package kubetest

import (
	"fmt"
	"testing"

	authorizationv1 "k8s.io/api/authorization/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/gitfleet/gitfleet/internal/testing/await"
)

// AwaitAllowed returns once the cluster's authorizer lets user do every
// one of attrs. The RBAC authorizer learns of a new Role or binding from
// its own watch, so a client acting as user right after creating them may
// be refused for a moment; a SubjectAccessReview asks that same
// authorizer, so once it says allowed, the user is.
func (c *Cluster) AwaitAllowed(t testing.TB, user string, attrs ...authorizationv1.ResourceAttributes) {
	t.Helper()
	cs, err := kubernetes.NewForConfig(c.AdminConfig())
	if err != nil {
		t.Fatal(err)
	}
	ctx := await.Context(t)
	for _, a := range attrs {
		await.Until(t, fmt.Sprintf("%s to be allowed to %s %s.%s", user, a.Verb, a.Resource, a.Group), func() bool {
			r, err := cs.AuthorizationV1().SubjectAccessReviews().Create(ctx, &authorizationv1.SubjectAccessReview{
				Spec: authorizationv1.SubjectAccessReviewSpec{User: user, ResourceAttributes: &a}}, metav1.CreateOptions{})
			return err == nil && r.Status.Allowed
		})
	}
}
