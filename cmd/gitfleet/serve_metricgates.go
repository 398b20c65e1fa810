package main

import (
	"fmt"

	"github.com/gitfleet/gitfleet/reconciler/metricgate"
)

// metricGates is serve's metric gate evaluator: a gate queries
// --prometheus-url, or a Prometheus of --prometheus-allowed-url that it
// names, never another URL someone pushed.
func (o serveOptions) metricGates() *metricgate.Evaluator {
	return &metricgate.Evaluator{URL: o.prometheusURL, Allowed: o.prometheusAllowedURLs}
}

// checkPrometheusAllowedURLs refuses, at start, an allowed URL no gate
// could ever match.
func checkPrometheusAllowedURLs(allowed []string) error {
	for _, u := range allowed {
		if _, err := metricgate.NormalizeURL(u); err != nil {
			return fmt.Errorf("--prometheus-allowed-url %s: %w", u, err)
		}
	}
	return nil
}
