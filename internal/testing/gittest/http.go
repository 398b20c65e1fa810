package gittest

import (
	"encoding/pem"
	"net/http"
	"net/http/cgi"
	"net/http/httptest"
	"os"
	"path/filepath"
	"testing"
)

// HTTPOptions configures HTTPBackend.
type HTTPOptions struct {
	// User and Password are accepted by HTTP basic auth; so is any user
	// name with Token as the password. Empty: no authentication.
	User, Password, Token string
	// TLS serves https with a certificate of a test CA.
	TLS bool
}

// HTTPBackend serves every repository below root through the real
// git http-backend (CGI), fetch and push, and returns the URL prefix
// ("http(s)://127.0.0.1:PORT/") and, with TLS, the file of the CA that
// signed the server's certificate. Missing git-http-backend skips the test,
// or fails it under CI.
func HTTPBackend(tb testing.TB, root string, opts HTTPOptions) (url, caFile string) {
	tb.Helper()
	Require(tb, "git")
	backend := filepath.Join(Must(tb, root, "--exec-path"), "git-http-backend")
	if _, err := os.Stat(backend); err != nil {
		Missing(tb, "git-http-backend is not installed")
	}
	user := opts.User
	if user == "" {
		user = "git"
	}
	cgiHandler := &cgi.Handler{
		Path: backend,
		Env: []string{
			"GIT_PROJECT_ROOT=" + root,
			"GIT_HTTP_EXPORT_ALL=1",
			"REMOTE_USER=" + user, // enables receive-pack
			"GIT_CONFIG_NOSYSTEM=1",
			"HOME=" + root,
		},
	}
	auth := opts.User != "" || opts.Token != ""
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if auth {
			u, p, ok := r.BasicAuth()
			if !ok || !(opts.User != "" && u == opts.User && p == opts.Password || opts.Token != "" && p == opts.Token) {
				w.Header().Set("WWW-Authenticate", `Basic realm="git"`)
				http.Error(w, "unauthorized", http.StatusUnauthorized)
				return
			}
		}
		cgiHandler.ServeHTTP(w, r)
	}))
	tb.Cleanup(srv.Close)
	if !opts.TLS {
		srv.Start()
		return srv.URL + "/", ""
	}
	srv.StartTLS()
	caFile = filepath.Join(tb.TempDir(), "ca.pem")
	ca := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw})
	if err := os.WriteFile(caFile, ca, 0o600); err != nil {
		tb.Fatal(err)
	}
	return srv.URL + "/", caFile
}
