package main

import (
	"fmt"
	"net/http"
	"os"
	"strings"

	"github.com/canonical/lxd/shared"
	lxdapi "github.com/canonical/lxd/shared/api"

	"github.com/lxd-deployd/lxd-deployd/client"
	"github.com/lxd-deployd/lxd-deployd/shared/validate"
	"github.com/lxd-deployd/lxd-deployd/shared/version"
)

// loadConfig reads the configuration from $LXD_DEPLOY_CONF or ~/.config/lxd-deploy.
func (a *app) loadConfig() (*config, error) {
	dir, err := configDir()
	if err != nil {
		return nil, err
	}

	return loadConfig(dir)
}

// connectionArgs are the arguments shared by every connection.
func (a *app) connectionArgs() *client.ConnectionArgs {
	return &client.ConnectionArgs{Project: a.project, UserAgent: "lxd-deploy/" + version.Version}
}

// connect opens a connection to a remote: the unix socket for unix:// addresses, HTTPS
// with this user's client certificate and the remote's pinned certificate otherwise.
func (a *app) connect(c *config, remote string) (*client.Server, error) {
	r, err := c.remote(remote)
	if err != nil {
		return nil, err
	}

	if r.Protocol != "" {
		return nil, fmt.Errorf("remote %q is an image server (%s): it serves images to \"deployment shape create --from-image %s:ALIAS\", not deployments", remote, r.Protocol, remote)
	}

	args := a.connectionArgs()
	if strings.HasPrefix(r.Addr, "unix:") {
		path := socketPath(r.Addr)
		a.log().Debug("connecting", "remote", remote, "socket", path, "project", args.Project)
		_, err := os.Stat(path)
		if err != nil {
			return nil, fmt.Errorf("cannot reach lxd-deployd at %s: %w: is the daemon running? (LXD_DEPLOYD_DIR selects its data directory)", path, err)
		}

		return client.ConnectUnix(path, args)
	}

	serverCert, err := os.ReadFile(c.serverCertPath(remote))
	if err != nil {
		return nil, fmt.Errorf("certificate of remote %q is missing: remove the remote and add it again: %w", remote, err)
	}

	args.TLSClientCert, args.TLSClientKey, err = c.clientCert()
	if err != nil {
		return nil, err
	}

	args.TLSServerCert = string(serverCert)
	a.log().Debug("connecting", "remote", remote, "address", r.Addr, "project", args.Project)
	return client.ConnectHTTPS(r.Addr, args)
}

// clientCert returns this user's client key pair, generating it on first use as lxc does.
func (c *config) clientCert() (certPEM string, keyPEM string, err error) {
	certPath, keyPath := c.clientCertPaths()
	err = os.MkdirAll(c.dir, 0o700)
	if err != nil {
		return "", "", err
	}

	err = shared.FindOrGenCert(certPath, keyPath, true, shared.CertOptions{})
	if err != nil {
		return "", "", fmt.Errorf("generate the client certificate: %w", err)
	}

	certData, err := os.ReadFile(certPath)
	if err != nil {
		return "", "", err
	}

	keyData, err := os.ReadFile(keyPath)
	if err != nil {
		return "", "", err
	}

	return string(certData), string(keyData), nil
}

// target is an object on a remote, from a "[<remote>:]<name>" argument.
type target struct {
	server *client.Server
	remote string
	name   string
}

// connectArg parses "[<remote>:]<name>" and connects to the remote. kind names the object
// for name validation ("deployment", ...); an empty kind accepts only "[<remote>:]".
func (a *app) connectArg(arg string, kind string) (*target, error) {
	c, err := a.loadConfig()
	if err != nil {
		return nil, err
	}

	remote, name, err := c.parseRemote(arg)
	if err != nil {
		return nil, err
	}

	switch {
	case kind == "" && name != "":
		return nil, fmt.Errorf("%q: expected only a remote, as in %q", arg, remote+":")
	case kind != "":
		err = validate.Name(kind, name)
		if err != nil {
			return nil, err
		}
	}

	server, err := a.connect(c, remote)
	if err != nil {
		return nil, err
	}

	return &target{server: server, remote: remote, name: name}, nil
}

// connectRemoteArg connects to the remote of an optional "[<remote>:]" argument.
func (a *app) connectRemoteArg(args []string) (*client.Server, error) {
	arg := ""
	if len(args) > 0 {
		arg = args[0]
		if !strings.HasSuffix(arg, ":") {
			return nil, fmt.Errorf("%q: expected a remote followed by ':', as in %q", arg, arg+":")
		}
	}

	t, err := a.connectArg(arg, "")
	if err != nil {
		return nil, err
	}

	return t.server, nil
}

// newName checks the new name of a rename. A "<remote>:" prefix is accepted only if it
// is the object's own remote: rename never moves objects between daemons.
func (t *target) newName(arg string, kind string) (string, error) {
	remote, name, found := strings.Cut(arg, ":")
	if found {
		if remote != t.remote {
			return "", fmt.Errorf("cannot rename %s %s on remote %q to one on remote %q: rename does not move between remotes", kind, t.name, t.remote, remote)
		}
	} else {
		name = arg
	}

	return name, validate.Name(kind, name)
}

// explain adds what to do to the server's errors that need a hint; the server's own
// message is kept as is.
func explain(err error) error {
	if err == nil {
		return nil
	}

	if lxdapi.StatusErrorCheck(err, http.StatusPreconditionFailed) {
		return fmt.Errorf("%w: it was changed by someone else since it was read; run the command again", err)
	}

	return err
}
