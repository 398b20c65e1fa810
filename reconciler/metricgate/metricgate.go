// Package metricgate evaluates the PromQL queries of metric gates against
// Prometheus's HTTP API (client_golang's api/prometheus/v1) for the
// update-run engine, which never does HTTP itself: the Evaluator answers
// updaterun.MetricEvaluator, running each evaluation in the background and
// asking for a pass of its run when it is done.
//
// A gate's own prometheusURL is written by whoever can push to the
// repository, so the daemon asks only the Prometheus servers its operator
// named (Allowed): any other URL is never requested, as the daemon must not
// be made to send requests to internal services or cloud metadata (SSRF).
package metricgate

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/api"
	promv1 "github.com/prometheus/client_golang/api/prometheus/v1"
	"github.com/prometheus/common/model"

	"github.com/gitfleet/gitfleet/reconciler/hub"
	"github.com/gitfleet/gitfleet/reconciler/updaterun"
)

// DefaultQueryTimeout bounds one evaluation (all its queries).
const DefaultQueryTimeout = 30 * time.Second

// Evaluator is an updaterun.MetricEvaluator on Prometheus.
type Evaluator struct {
	// URL is the Prometheus of gates that name none (serve's
	// --prometheus-url); "" leaves those gates without one.
	URL string
	// Allowed are the other Prometheus servers a gate's prometheusURL may
	// name (serve's --prometheus-allowed-url); URL is always allowed.
	Allowed []string
	// QueryTimeout bounds one evaluation (default DefaultQueryTimeout).
	QueryTimeout time.Duration

	mu      sync.Mutex
	wake    func(hub.Key)
	running map[evaluation]*result
	clients map[string]promv1.API
}

type evaluation struct {
	run     hub.Key
	request string
	seq     int32
}

type result struct {
	done bool
	res  updaterun.MetricResult
}

// SetWake names who is told that an evaluation of a run finished (the
// controller's EnqueueRun); nil tells no one.
func (e *Evaluator) SetWake(wake func(hub.Key)) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.wake = wake
}

// Evaluate implements updaterun.MetricEvaluator.
func (e *Evaluator) Evaluate(q updaterun.MetricQuery) (updaterun.MetricResult, bool) {
	k := evaluation{run: q.Run, request: q.Request, seq: q.Seq}
	e.mu.Lock()
	defer e.mu.Unlock()
	if r, ok := e.running[k]; ok {
		if !r.done {
			return updaterun.MetricResult{}, false
		}
		delete(e.running, k)
		return r.res, true
	}
	// An evaluation of the same gate the engine no longer waits for (its
	// result was lost with a failed write) is forgotten.
	for old := range e.running {
		if old.run == k.run && old.request == k.request && old.seq != k.seq && e.running[old].done {
			delete(e.running, old)
		}
	}
	url := e.URL
	if q.PrometheusURL != "" {
		allowed, err := e.allowed(q.PrometheusURL)
		if err != nil {
			return updaterun.MetricResult{Err: err}, true
		}
		url = allowed
	}
	if url == "" {
		return updaterun.MetricResult{Err: errors.New(updaterun.MetricGateNoPrometheusMessage)}, true
	}
	client, err := e.client(url)
	if err != nil {
		return updaterun.MetricResult{Err: err}, true
	}
	if e.running == nil {
		e.running = map[evaluation]*result{}
	}
	r := &result{}
	e.running[k] = r
	go func() {
		res := e.run(client, q.Queries)
		e.mu.Lock()
		r.done, r.res = true, res
		wake := e.wake
		e.mu.Unlock()
		if wake != nil {
			wake(q.Run)
		}
	}()
	return updaterun.MetricResult{}, false
}

// Forget implements updaterun.GateForgetter: the evaluations of a run
// that was deleted or ended are dropped, finished or not (one still
// running finishes into nothing).
func (e *Evaluator) Forget(run hub.Key) {
	e.mu.Lock()
	defer e.mu.Unlock()
	for k := range e.running {
		if k.run == run {
			delete(e.running, k)
		}
	}
}

// NotAllowedMessageFmt is the error of an evaluation whose gate names a
// Prometheus the operator did not allow; it takes the gate's URL.
const NotAllowedMessageFmt = "prometheusURL %s is not allowed, so it is not queried: gitfleet serve asks only its --prometheus-url and the URLs of --prometheus-allowed-url (an operator adds it there)"

// allowed returns the operator's spelling of the allowed Prometheus the
// gate's URL names, so what is requested is exactly what was allowed.
func (e *Evaluator) allowed(gateURL string) (string, error) {
	want, err := NormalizeURL(gateURL)
	if err == nil {
		for _, u := range append([]string{e.URL}, e.Allowed...) {
			if n, err := NormalizeURL(u); err == nil && u != "" && n == want {
				return u, nil
			}
		}
	}
	return "", fmt.Errorf(NotAllowedMessageFmt, gateURL)
}

// NormalizeURL is the form in which allowed Prometheus URLs are compared:
// scheme, host and port (the scheme's default made explicit) and path
// without a trailing slash, all but the path in lower case. A URL with
// user information, a query or a fragment names no Prometheus server.
func NormalizeURL(s string) (string, error) {
	u, err := url.Parse(s)
	if err != nil {
		return "", err
	}
	scheme := strings.ToLower(u.Scheme)
	if scheme != "http" && scheme != "https" {
		return "", fmt.Errorf("%s is not an http:// or https:// URL", s)
	}
	if u.Host == "" || u.User != nil || u.RawQuery != "" || u.ForceQuery || u.Fragment != "" {
		return "", fmt.Errorf("%s is not a Prometheus URL (scheme, host, port and path only)", s)
	}
	port := u.Port()
	if port == "" {
		port = map[string]string{"http": "80", "https": "443"}[scheme]
	}
	return scheme + "://" + net.JoinHostPort(strings.ToLower(u.Hostname()), port) + strings.TrimRight(u.EscapedPath(), "/"), nil
}

// client is the API client of one Prometheus, made once. Called with mu
// held.
func (e *Evaluator) client(url string) (promv1.API, error) {
	if c, ok := e.clients[url]; ok {
		return c, nil
	}
	c, err := api.NewClient(api.Config{Address: url})
	if err != nil {
		return nil, fmt.Errorf("prometheus %s: %w", url, err)
	}
	if e.clients == nil {
		e.clients = map[string]promv1.API{}
	}
	e.clients[url] = promv1.NewAPI(c)
	return e.clients[url], nil
}

// run asks every query now and gathers their samples.
func (e *Evaluator) run(client promv1.API, queries []updaterun.ClusterQuery) updaterun.MetricResult {
	timeout := e.QueryTimeout
	if timeout <= 0 {
		timeout = DefaultQueryTimeout
	}
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	var out updaterun.MetricResult
	for _, q := range queries {
		v, _, _, err := client.Query(ctx, q.Expr, time.Time{})
		if err != nil {
			return updaterun.MetricResult{Err: fmt.Errorf("query `%s`: %w", q.Expr, err)}
		}
		samples, err := Samples(v, q.Cluster)
		if err != nil {
			return updaterun.MetricResult{Err: fmt.Errorf("query `%s`: %w", q.Expr, err)}
		}
		out.Samples = append(out.Samples, samples...)
	}
	return out
}

// Samples turns an instant query's result into the gate's values: a scalar
// or every series of a vector. cluster names the cluster of a $cluster
// query; otherwise a series' cluster label does, or its labels.
func Samples(v model.Value, cluster string) ([]updaterun.MetricValue, error) {
	switch v := v.(type) {
	case *model.Scalar:
		return []updaterun.MetricValue{{Cluster: cluster, Value: float64(v.Value)}}, nil
	case model.Vector:
		out := make([]updaterun.MetricValue, 0, len(v))
		for _, s := range v {
			mv := updaterun.MetricValue{Cluster: cluster, Value: float64(s.Value)}
			if mv.Cluster == "" {
				mv.Cluster = string(s.Metric["cluster"])
			}
			if mv.Cluster == "" && len(s.Metric) > 0 {
				mv.Series = s.Metric.String()
			}
			out = append(out, mv)
		}
		return out, nil
	case nil:
		return nil, nil
	}
	return nil, fmt.Errorf("a %s result, want an instant vector or a scalar", v.Type())
}
