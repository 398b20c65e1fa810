package gitsource

import (
	"bytes"
	"crypto/ed25519"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/crypto/ssh"
	"golang.org/x/crypto/ssh/knownhosts"
)

// sshKey is a generated ed25519 key pair.
type sshKey struct {
	signer ssh.Signer
	priv   ed25519.PrivateKey
}

func newSSHKey(t *testing.T) sshKey {
	t.Helper()
	_, priv, err := ed25519.GenerateKey(nil)
	if err != nil {
		t.Fatal(err)
	}
	signer, err := ssh.NewSignerFromKey(priv)
	if err != nil {
		t.Fatal(err)
	}
	return sshKey{signer: signer, priv: priv}
}

// file writes the private key in OpenSSH format, encrypted if passphrase
// is set, and returns its path.
func (k sshKey) file(t *testing.T, passphrase string) string {
	t.Helper()
	var block *pem.Block
	var err error
	if passphrase == "" {
		block, err = ssh.MarshalPrivateKey(k.priv, "")
	} else {
		block, err = ssh.MarshalPrivateKeyWithPassphrase(k.priv, "", []byte(passphrase))
	}
	if err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(t.TempDir(), "id_ed25519")
	if err := os.WriteFile(p, pem.EncodeToMemory(block), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// knownHostsFile writes a known_hosts file trusting key for addr.
func knownHostsFile(t *testing.T, addr string, key ssh.PublicKey) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "known_hosts")
	line := knownhosts.Line([]string{knownhosts.Normalize(addr)}, key) + "\n"
	if err := os.WriteFile(p, []byte(line), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// startSSHServer serves git-upload-pack and git-receive-pack for
// repositories below root over SSH on 127.0.0.1, like a forge's SSH
// endpoint: it accepts only client, and runs the real git binaries.
func startSSHServer(t *testing.T, root string, client ssh.PublicKey) (addr string, hostKey ssh.PublicKey) {
	t.Helper()
	host := newSSHKey(t)
	cfg := &ssh.ServerConfig{
		PublicKeyCallback: func(_ ssh.ConnMetadata, k ssh.PublicKey) (*ssh.Permissions, error) {
			if bytes.Equal(k.Marshal(), client.Marshal()) {
				return nil, nil
			}
			return nil, errors.New("unknown key")
		},
	}
	cfg.AddHostKey(host.signer)
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	go func() {
		for {
			nc, err := l.Accept()
			if err != nil {
				return
			}
			go serveSSH(nc, cfg, root)
		}
	}()
	return l.Addr().String(), host.signer.PublicKey()
}

func serveSSH(nc net.Conn, cfg *ssh.ServerConfig, root string) {
	conn, chans, reqs, err := ssh.NewServerConn(nc, cfg)
	if err != nil {
		nc.Close()
		return
	}
	defer conn.Close()
	go ssh.DiscardRequests(reqs)
	for nch := range chans {
		if nch.ChannelType() != "session" {
			nch.Reject(ssh.UnknownChannelType, "session only")
			continue
		}
		ch, chReqs, err := nch.Accept()
		if err != nil {
			continue
		}
		go func() {
			for req := range chReqs {
				switch req.Type {
				case "exec":
					var payload struct{ Command string }
					if err := ssh.Unmarshal(req.Payload, &payload); err != nil {
						req.Reply(false, nil)
						continue
					}
					req.Reply(true, nil)
					go runSSHCommand(ch, payload.Command, root)
				case "env":
					req.Reply(true, nil)
				default:
					req.Reply(false, nil)
				}
			}
		}()
	}
}

// runSSHCommand runs "git-upload-pack '<path>'" (or receive-pack) on the
// channel and reports its exit status.
func runSSHCommand(ch ssh.Channel, command, root string) {
	defer ch.Close()
	status := uint32(1)
	defer func() {
		ch.SendRequest("exit-status", false, ssh.Marshal(struct{ Status uint32 }{status}))
	}()
	name, arg, _ := strings.Cut(command, " ")
	if name != "git-upload-pack" && name != "git-receive-pack" {
		fmt.Fprintf(ch.Stderr(), "command not allowed: %s\n", name)
		return
	}
	repo := filepath.Join(root, filepath.Clean("/"+strings.Trim(arg, "'")))
	cmd := exec.Command("git", strings.TrimPrefix(name, "git-"), repo)
	cmd.Env = gitEnv(root)
	cmd.Stdout, cmd.Stderr = ch, ch.Stderr()
	in, err := cmd.StdinPipe()
	if err != nil {
		return
	}
	if err := cmd.Start(); err != nil {
		return
	}
	go func() {
		io.Copy(in, ch)
		in.Close()
	}()
	if err := cmd.Wait(); err == nil {
		status = 0
	}
}

func TestSSH(t *testing.T) {
	f := newFixture(t)
	client := newSSHKey(t)
	addr, hostKey := startSSHServer(t, f.root, client.signer.PublicKey())

	t.Run("key and known_hosts", func(t *testing.T) {
		cfg := f.config(t)
		cfg.URL = "ssh://git@" + addr + "/remote.git"
		cfg.Auth = Auth{SSHKeyFile: client.file(t, ""), KnownHostsFile: knownHostsFile(t, addr, hostKey)}
		exerciseWire(t, f, cfg)
	})

	t.Run("encrypted key", func(t *testing.T) {
		cfg := f.config(t)
		cfg.URL = "ssh://git@" + addr + "/remote.git"
		cfg.Auth = Auth{
			SSHKeyFile:           client.file(t, "key-passphrase"),
			SSHKeyPassphraseFile: writeSecret(t, "key-passphrase"),
			KnownHostsFile:       knownHostsFile(t, addr, hostKey),
		}
		if _, err := Open(ctxT(t), cfg); err != nil {
			t.Fatal(err)
		}
	})

	t.Run("unknown host key is refused", func(t *testing.T) {
		cfg := f.config(t)
		cfg.URL = "ssh://git@" + addr + "/remote.git"
		cfg.Auth = Auth{SSHKeyFile: client.file(t, ""), KnownHostsFile: knownHostsFile(t, addr, newSSHKey(t).signer.PublicKey())}
		if _, err := Open(ctxT(t), cfg); err == nil {
			t.Fatal("connected to a server whose host key is not in known_hosts")
		}
	})

	t.Run("unknown client key", func(t *testing.T) {
		cfg := f.config(t)
		cfg.URL = "ssh://git@" + addr + "/remote.git"
		cfg.Auth = Auth{SSHKeyFile: newSSHKey(t).file(t, ""), KnownHostsFile: knownHostsFile(t, addr, hostKey)}
		if _, err := Open(ctxT(t), cfg); !errors.Is(err, ErrAuth) {
			t.Fatalf("Open with an unknown client key: %v, want ErrAuth", err)
		}
	})
}

func TestAuthErrors(t *testing.T) {
	httpsEP := mustEndpoint(t, "https://example.com/fleet.git")
	sshEP := mustEndpoint(t, "git@example.com:org/fleet.git")
	garbage := writeSecret(t, "-----BEGIN OPENSSH PRIVATE KEY-----\nnot-a-key-but-secret-material\n-----END OPENSSH PRIVATE KEY-----")
	big := filepath.Join(t.TempDir(), "big")
	if err := os.WriteFile(big, bytes.Repeat([]byte("x"), maxSecretSize+1), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Setenv("GITSOURCE_EMPTY", "")

	for _, tc := range []struct {
		name   string
		auth   Auth
		ep     string
		want   error
		inText string
	}{
		{"token and password", Auth{TokenEnv: "X", PasswordEnv: "Y"}, "https", ErrInvalid, "either"},
		{"password without user", Auth{PasswordFile: writeSecret(t, "pw")}, "https", ErrInvalid, "username"},
		{"unset token env", Auth{TokenEnv: "GITSOURCE_EMPTY"}, "https", ErrInvalid, "GITSOURCE_EMPTY"},
		{"missing token file", Auth{TokenFile: "/nonexistent/token"}, "https", ErrInvalid, "/nonexistent/token"},
		{"empty token file", Auth{TokenFile: writeSecret(t, "")}, "https", ErrInvalid, "empty"},
		{"oversize token file", Auth{TokenFile: big}, "https", ErrTooLarge, big},
		{"missing CA file", Auth{CAFile: "/nonexistent/ca.pem"}, "https", ErrInvalid, "/nonexistent/ca.pem"},
		{"missing key file", Auth{SSHKeyFile: "/nonexistent/id"}, "ssh", ErrInvalid, "/nonexistent/id"},
		{"garbage key", Auth{SSHKeyFile: garbage}, "ssh", ErrInvalid, garbage},
		{"missing known_hosts", Auth{SSHKeyFile: newSSHKey(t).file(t, ""), KnownHostsFile: "/nonexistent/kh"}, "ssh", ErrInvalid, "/nonexistent/kh"},
	} {
		ep := httpsEP
		if tc.ep == "ssh" {
			ep = sshEP
		}
		_, err := tc.auth.resolve(ep, &redactor{})
		if !errors.Is(err, tc.want) || !strings.Contains(err.Error(), tc.inText) {
			t.Errorf("%s: %v; want %v mentioning %q", tc.name, err, tc.want, tc.inText)
		}
		if err != nil && strings.Contains(err.Error(), "secret-material") {
			t.Errorf("%s: error quotes the key file: %v", tc.name, err)
		}
	}
}

func TestNormaliseURL(t *testing.T) {
	wd, _ := os.Getwd()
	for in, want := range map[string]string{
		"git@github.com:org/fleet.git":     "git@github.com:org/fleet.git",
		"ssh://git@github.com/org/fleet":   "ssh://git@github.com/org/fleet",
		"https://github.com/org/fleet.git": "https://github.com/org/fleet.git",
		"/srv/fleet.git":                   "file:///srv/fleet.git",
		"file:///srv/fleet.git":            "file:///srv/fleet.git",
		"fleet.git":                        "file://" + filepath.Join(wd, "fleet.git"),
		"  https://github.com/org/fleet  ": "https://github.com/org/fleet",
	} {
		got, _, err := normaliseURL(in, &redactor{})
		if err != nil || got != want {
			t.Errorf("normaliseURL(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
	_, ep, _ := normaliseURL("git@github.com:org/fleet.git", &redactor{})
	if ep.Protocol != "ssh" || ep.User != "git" || ep.Host != "github.com" {
		t.Errorf("scp-style endpoint = %+v", ep)
	}
}
