package kube

import (
	"fmt"

	"k8s.io/client-go/rest"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// ForConfig is the driver of one member reached through cfg rather than
// a kubeconfig (gitfleet agent's own member, which may be its pod's
// service account); the member is the context name.
func ForConfig(cfg *rest.Config, name string, opts Options) *Clusters {
	opts.defaults()
	c := newClusters(opts, clientcmdapi.Config{Contexts: map[string]*clientcmdapi.Context{name: {}}}, "the member's configuration")
	c.configs = map[string]*rest.Config{name: rest.CopyConfig(cfg)}
	return c
}

// Client is the client of a context, as the driver reaches it.
func (c *Clusters) Client(context string) (client.Client, error) {
	cl, err := c.cluster(context)
	if err != nil {
		return nil, fmt.Errorf("kubeconfig context %q: %w", context, err)
	}
	return cl.client, nil
}
