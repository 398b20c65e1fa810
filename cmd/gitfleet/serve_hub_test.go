package main

import (
	"context"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// --hub takes embedded or kube; a kube hub serve cannot reach is an error
// at once (serve ends), not a start retried as an unreadable repository.
func TestServeHubFlag(t *testing.T) {
	if err := (hubOptions{kind: "etcd"}).validate(); err == nil || !strings.Contains(err.Error(), "want embedded or kube") {
		t.Errorf("--hub etcd: %v; want a refusal naming the choices", err)
	}
	newHub, err := hubOptions{kind: hubEmbedded}.newHub(context.Background(), slog.Default())
	if err != nil || newHub != nil {
		t.Errorf("--hub embedded: %v, %v; want the default hub (nil)", newHub != nil, err)
	}

	kubeconfig := filepath.Join(t.TempDir(), "kubeconfig")
	if err := os.WriteFile(kubeconfig, []byte(`apiVersion: v1
kind: Config
clusters:
- name: gone
  cluster: {server: "https://127.0.0.1:1"}
users:
- name: admin
  user: {token: t}
contexts:
- name: hub
  context: {cluster: gone, user: admin}
`), 0o600); err != nil {
		t.Fatal(err)
	}
	_, err = hubOptions{kind: hubKube, kubeconfig: kubeconfig, context: "hub"}.newHub(context.Background(), slog.Default())
	if err == nil || !strings.Contains(err.Error(), "127.0.0.1:1") {
		t.Errorf("--hub kube on an unreachable hub: %v; want an error naming it", err)
	}
	_, err = hubOptions{kind: hubKube, kubeconfig: kubeconfig, context: "nope"}.newHub(context.Background(), slog.Default())
	if err == nil || !strings.Contains(err.Error(), "nope") {
		t.Errorf("--hub-context nope: %v; want an error naming the context", err)
	}
}
