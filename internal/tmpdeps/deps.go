package tmpdeps

import (
	_ "github.com/fsnotify/fsnotify"
	_ "github.com/go-git/go-git/v5"
	_ "github.com/go-git/go-git/v5/plumbing/transport/ssh"
	_ "github.com/go-git/go-git/v5/plumbing/transport/http"
	_ "github.com/prometheus/client_golang/prometheus"
	_ "github.com/prometheus/client_golang/prometheus/promhttp"
	_ "github.com/prometheus/client_golang/prometheus/testutil"
	_ "github.com/prometheus/client_golang/prometheus/testutil/promlint"
	_ "github.com/spf13/cobra"
	_ "k8s.io/apimachinery/pkg/apis/meta/v1"
	_ "k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	_ "k8s.io/apimachinery/pkg/labels"
	_ "k8s.io/apimachinery/pkg/api/meta"
	_ "k8s.io/apimachinery/pkg/util/validation"
	_ "sigs.k8s.io/kustomize/api/krusty"
	_ "sigs.k8s.io/kustomize/kyaml/filesys"
	_ "sigs.k8s.io/yaml"
)
