// Package crd holds what config/crd, the CustomResourceDefinitions of
// gitfleet's kinds, is generated from and the tests that keep it right:
// placement/v1beta1 and cluster/v1beta1 declare one root type per kind for
// controller-gen (`make crds`), and the tests fail when config/crd is stale,
// when a kind gitfleet serves has no CRD, and when a real kube-apiserver
// refuses what gitfleet accepts or serves other columns than KubeFleet.
package crd
