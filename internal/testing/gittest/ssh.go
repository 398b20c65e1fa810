package gittest

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

// SSHKey is a generated ed25519 key pair.
type SSHKey struct {
	Signer ssh.Signer
	priv   ed25519.PrivateKey
}

func NewSSHKey(tb testing.TB) SSHKey {
	tb.Helper()
	_, priv, err := ed25519.GenerateKey(nil)
	if err != nil {
		tb.Fatal(err)
	}
	signer, err := ssh.NewSignerFromKey(priv)
	if err != nil {
		tb.Fatal(err)
	}
	return SSHKey{Signer: signer, priv: priv}
}

// File writes the private key in OpenSSH format, encrypted if passphrase
// is set, and returns its path.
func (k SSHKey) File(tb testing.TB, passphrase string) string {
	tb.Helper()
	var block *pem.Block
	var err error
	if passphrase == "" {
		block, err = ssh.MarshalPrivateKey(k.priv, "")
	} else {
		block, err = ssh.MarshalPrivateKeyWithPassphrase(k.priv, "", []byte(passphrase))
	}
	if err != nil {
		tb.Fatal(err)
	}
	p := filepath.Join(tb.TempDir(), "id_ed25519")
	if err := os.WriteFile(p, pem.EncodeToMemory(block), 0o600); err != nil {
		tb.Fatal(err)
	}
	return p
}

// KnownHostsFile writes a known_hosts file trusting key for addr.
func KnownHostsFile(tb testing.TB, addr string, key ssh.PublicKey) string {
	tb.Helper()
	p := filepath.Join(tb.TempDir(), "known_hosts")
	line := knownhosts.Line([]string{knownhosts.Normalize(addr)}, key) + "\n"
	if err := os.WriteFile(p, []byte(line), 0o600); err != nil {
		tb.Fatal(err)
	}
	return p
}

// SSHServer serves git-upload-pack and git-receive-pack for
// repositories below root over SSH on 127.0.0.1, like a forge's SSH
// endpoint: it accepts only client, and runs the real git binaries.
func SSHServer(tb testing.TB, root string, client ssh.PublicKey) (addr string, hostKey ssh.PublicKey) {
	tb.Helper()
	host := NewSSHKey(tb)
	cfg := &ssh.ServerConfig{
		PublicKeyCallback: func(_ ssh.ConnMetadata, k ssh.PublicKey) (*ssh.Permissions, error) {
			if bytes.Equal(k.Marshal(), client.Marshal()) {
				return nil, nil
			}
			return nil, errors.New("unknown key")
		},
	}
	cfg.AddHostKey(host.Signer)
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { l.Close() })
	go func() {
		for {
			nc, err := l.Accept()
			if err != nil {
				return
			}
			go serveSSH(nc, cfg, root)
		}
	}()
	return l.Addr().String(), host.Signer.PublicKey()
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
	cmd.Env = Env(root)
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
