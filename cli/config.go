package main

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"gopkg.in/yaml.v2"
)

// localRemote is the built-in remote: the daemon's unix socket on this machine.
const localRemote = "local"

// unixAddr is the address of the local remote: the socket under $LXD_DEPLOYD_DIR.
const unixAddr = "unix://"

// defaultDaemonDir is lxd-deployd's default data directory (its --data-dir).
const defaultDaemonDir = "/var/lib/lxd-deployd"

// remoteConfig is one remote in config.yml.
type remoteConfig struct {
	// Addr is https://host:port, or unix:// (the default socket) or unix:///path.
	Addr string `yaml:"addr"`

	// Protocol is empty for an lxd-deployd, or "lxd" or "simplestreams" for an image
	// server that shapes' --from-image name as lxc launch does (remote_images.go).
	Protocol string `yaml:"protocol,omitempty"`

	// Public is true for an image server, read without credentials (as lxc's --public).
	Public bool `yaml:"public,omitempty"`
}

// config is config.yml: the remotes and the default one. dir is where it was read from;
// the client key pair and pinned server certificates live beside it.
type config struct {
	DefaultRemote string                  `yaml:"default_remote"`
	Remotes       map[string]remoteConfig `yaml:"remotes"`

	// DefaultRegistry is the template registry short references (<template>:<version>)
	// resolve against: <host>/<owner>/<repo>[/<collection>] ("lxd-deploy registry default").
	DefaultRegistry string `yaml:"default_registry,omitempty"`

	// Registries maps template registries (<host>/<owner>/<repo>) to where they are served,
	// a URL or a directory, as --registry NAME=URL|DIR does for one command.
	Registries map[string]string `yaml:"registries,omitempty"`

	dir string
}

// configDir is $LXD_DEPLOY_CONF, else ~/.config/lxd-deploy.
func configDir() (string, error) {
	dir := os.Getenv("LXD_DEPLOY_CONF")
	if dir != "" {
		return dir, nil
	}

	home, err := os.UserHomeDir()
	if err != nil {
		return "", fmt.Errorf("cannot find the configuration directory: set LXD_DEPLOY_CONF or HOME: %w", err)
	}

	return filepath.Join(home, ".config", "lxd-deploy"), nil
}

// loadConfig reads dir/config.yml. A missing file is an empty configuration; the local
// remote is always there.
func loadConfig(dir string) (*config, error) {
	c := &config{dir: dir}
	data, err := os.ReadFile(c.path())
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return nil, err
	}

	err = yaml.UnmarshalStrict(data, c)
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", c.path(), err)
	}

	if c.Remotes == nil {
		c.Remotes = map[string]remoteConfig{}
	}

	if _, ok := c.Remotes[localRemote]; !ok {
		c.Remotes[localRemote] = remoteConfig{Addr: unixAddr}
	}

	if c.DefaultRemote == "" {
		c.DefaultRemote = localRemote
	}

	if _, ok := c.Remotes[c.DefaultRemote]; !ok {
		return nil, fmt.Errorf("read %s: default_remote %q is not one of the remotes: fix it with \"lxd-deploy remote switch NAME\"", c.path(), c.DefaultRemote)
	}

	return c, nil
}

// save writes config.yml atomically (private: it names the servers this user manages).
func (c *config) save() error {
	data, err := yaml.Marshal(c)
	if err != nil {
		return err
	}

	err = os.MkdirAll(c.dir, 0o700)
	if err != nil {
		return err
	}

	tmp, err := os.CreateTemp(c.dir, ".config.yml.")
	if err != nil {
		return err
	}

	defer func() { _ = os.Remove(tmp.Name()) }()
	_, err = tmp.Write(data)
	if err == nil {
		err = tmp.Chmod(0o600)
	}

	closeErr := tmp.Close()
	if err != nil {
		return err
	}

	if closeErr != nil {
		return closeErr
	}

	return os.Rename(tmp.Name(), c.path())
}

func (c *config) path() string {
	return filepath.Join(c.dir, "config.yml")
}

// clientCertPaths are the client key pair, made on first HTTPS use.
func (c *config) clientCertPaths() (cert string, key string) {
	return filepath.Join(c.dir, "client.crt"), filepath.Join(c.dir, "client.key")
}

// serverCertPath is where a remote's server certificate is pinned.
func (c *config) serverCertPath(remote string) string {
	return filepath.Join(c.dir, "servercerts", remote+".crt")
}

// remoteNames returns the remote names, sorted.
func (c *config) remoteNames() []string {
	names := make([]string, 0, len(c.Remotes))
	for name := range c.Remotes {
		names = append(names, name)
	}

	sort.Strings(names)
	return names
}

// remote returns a remote by name, with an error that says how to list or add remotes.
func (c *config) remote(name string) (remoteConfig, error) {
	r, ok := c.Remotes[name]
	if !ok {
		return remoteConfig{}, fmt.Errorf("remote %q does not exist: see \"lxd-deploy remote list\", or add it with \"lxd-deploy remote add %s <token>\"", name, name)
	}

	return r, nil
}

// parseRemote splits "[<remote>:]<name>" into the remote (the default remote when there
// is no prefix) and the name, which may be empty ("prod:"). Names never contain ':', so
// the first ':' always ends the remote.
func (c *config) parseRemote(arg string) (remote string, name string, err error) {
	remote, name, found := strings.Cut(arg, ":")
	if !found {
		return c.DefaultRemote, arg, nil
	}

	if remote == "" {
		return "", "", fmt.Errorf("%q has an empty remote before ':': use <remote>:<name>, or just <name> for the default remote", arg)
	}

	_, err = c.remote(remote)
	if err != nil {
		return "", "", err
	}

	return remote, name, nil
}

// socketPath returns the unix socket of a unix:// address: unix:// is
// $LXD_DEPLOYD_DIR/unix.socket (default /var/lib/lxd-deployd/unix.socket).
func socketPath(addr string) string {
	path := strings.TrimPrefix(addr, "unix://")
	if path != "" {
		return path
	}

	dir := os.Getenv("LXD_DEPLOYD_DIR")
	if dir == "" {
		dir = defaultDaemonDir
	}

	return filepath.Join(dir, "unix.socket")
}
