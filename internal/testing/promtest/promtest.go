// Package promtest prepares a real Prometheus (Debian's package) for tests:
// its command, scraping one target every second on a free loopback port
// with its storage in a temporary folder, and the probe that says it is
// ready. Each test starts the process its own way (a watched server in the
// Git loop's tests, a plain testproc.Server elsewhere).
package promtest

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// Command is the prometheus command scraping target (host:port) every
// second, and the URL it will serve. Without the binary the test skips,
// unless CI=true, where it fails: CI installs the package.
func Command(t testing.TB, target string) (cmd *exec.Cmd, url string) {
	t.Helper()
	bin, err := exec.LookPath("prometheus")
	if err != nil {
		const how = "prometheus is not installed: apt-get install prometheus (Debian's package; the test runs its own instance, not the service)"
		if os.Getenv("CI") == "true" {
			t.Fatal(how)
		}
		t.Skip(how)
	}
	dir := t.TempDir()
	config := fmt.Sprintf(`global:
  scrape_interval: 1s
  evaluation_interval: 1s
scrape_configs:
  - job_name: gitfleet
    static_configs:
      - targets: [%q]
`, target)
	if err := os.WriteFile(filepath.Join(dir, "prometheus.yml"), []byte(config), 0o644); err != nil {
		t.Fatal(err)
	}
	addr := freeLoopbackAddr(t)
	return exec.Command(bin, "--config.file="+filepath.Join(dir, "prometheus.yml"),
		"--storage.tsdb.path="+filepath.Join(dir, "data"), "--web.listen-address="+addr), "http://" + addr
}

// Ready reports whether the Prometheus at url answers its readiness probe.
func Ready(ctx context.Context, url string) bool {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url+"/-/ready", nil)
	if err != nil {
		return false
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return false
	}
	resp.Body.Close()
	return resp.StatusCode == http.StatusOK
}

// freeLoopbackAddr is a loopback address no one listens on right now.
func freeLoopbackAddr(t testing.TB) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().String()
}
