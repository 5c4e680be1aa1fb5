package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestConfigLoadMissingFile(t *testing.T) {
	c, err := loadConfig(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}

	if c.DefaultRemote != localRemote || c.Remotes[localRemote].Addr != unixAddr {
		t.Fatalf("empty config: got default %q, remotes %v", c.DefaultRemote, c.Remotes)
	}
}

func TestConfigSaveLoad(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "conf")
	c, err := loadConfig(dir)
	if err != nil {
		t.Fatal(err)
	}

	c.Remotes["prod"] = remoteConfig{Addr: "https://10.0.0.1:8444"}
	c.DefaultRemote = "prod"
	err = c.save()
	if err != nil {
		t.Fatal(err)
	}

	info, err := os.Stat(c.path())
	if err != nil {
		t.Fatal(err)
	}

	if info.Mode().Perm() != 0o600 {
		t.Errorf("config.yml mode %v, want 0600", info.Mode().Perm())
	}

	loaded, err := loadConfig(dir)
	if err != nil {
		t.Fatal(err)
	}

	if loaded.DefaultRemote != "prod" || loaded.Remotes["prod"].Addr != "https://10.0.0.1:8444" || loaded.Remotes[localRemote].Addr != unixAddr {
		t.Fatalf("reloaded config differs: %+v", loaded)
	}

	entries, _ := os.ReadDir(dir)
	if len(entries) != 1 {
		t.Errorf("temporary files left behind: %v", entries)
	}
}

func TestConfigLoadErrors(t *testing.T) {
	tests := map[string]string{
		"unknown default": "default_remote: nope\n",
		"unknown field":   "remotes:\n  prod:\n    address: https://x\n",
		"not yaml":        "remotes: [\n",
	}

	for name, content := range tests {
		t.Run(name, func(t *testing.T) {
			dir := t.TempDir()
			err := os.WriteFile(filepath.Join(dir, "config.yml"), []byte(content), 0o600)
			if err != nil {
				t.Fatal(err)
			}

			_, err = loadConfig(dir)
			if err == nil || !strings.Contains(err.Error(), "config.yml") {
				t.Fatalf("want an error naming config.yml, got %v", err)
			}
		})
	}
}

func TestParseRemote(t *testing.T) {
	c := &config{DefaultRemote: "local", Remotes: map[string]remoteConfig{"local": {Addr: unixAddr}, "prod": {Addr: "https://h:1"}}}
	tests := []struct {
		arg, remote, name, err string
	}{
		{arg: "dep1", remote: "local", name: "dep1"},
		{arg: "", remote: "local", name: ""},
		{arg: "prod:", remote: "prod", name: ""},
		{arg: "prod:dep1", remote: "prod", name: "dep1"},
		{arg: "local:dep1", remote: "local", name: "dep1"},
		{arg: "prod:a:b", remote: "prod", name: "a:b"},
		{arg: "nope:dep1", err: `remote "nope" does not exist`},
		{arg: ":dep1", err: "empty remote"},
	}

	for _, tt := range tests {
		remote, name, err := c.parseRemote(tt.arg)
		if tt.err != "" {
			if err == nil || !strings.Contains(err.Error(), tt.err) {
				t.Errorf("parseRemote(%q): want error %q, got %v", tt.arg, tt.err, err)
			}

			continue
		}

		if err != nil || remote != tt.remote || name != tt.name {
			t.Errorf("parseRemote(%q) = %q, %q, %v; want %q, %q", tt.arg, remote, name, err, tt.remote, tt.name)
		}
	}

	c.DefaultRemote = "prod"
	remote, name, _ := c.parseRemote("dep1")
	if remote != "prod" || name != "dep1" {
		t.Errorf("with default prod: got %q %q", remote, name)
	}
}

func TestRemoveRenameRemote(t *testing.T) {
	newConfig := func() *config {
		return &config{DefaultRemote: "local", Remotes: map[string]remoteConfig{"local": {Addr: unixAddr}, "prod": {Addr: "https://h:1"}, "dev": {Addr: "https://h:2"}}}
	}

	c := newConfig()
	if err := c.removeRemote("local"); err == nil {
		t.Error("removing local must fail")
	}

	if err := c.removeRemote("nope"); err == nil {
		t.Error("removing an unknown remote must fail")
	}

	c.DefaultRemote = "prod"
	if err := c.removeRemote("prod"); err == nil || !strings.Contains(err.Error(), "switch") {
		t.Errorf("removing the default remote must fail and say to switch, got %v", err)
	}

	if err := c.removeRemote("dev"); err != nil {
		t.Fatal(err)
	}

	if _, ok := c.Remotes["dev"]; ok {
		t.Error("dev still there")
	}

	c = newConfig()
	c.DefaultRemote = "prod"
	if err := c.renameRemote("prod", "dev"); err == nil {
		t.Error("renaming onto an existing remote must fail")
	}

	if err := c.renameRemote("local", "here"); err == nil {
		t.Error("renaming local must fail")
	}

	if err := c.renameRemote("prod", "bad_name"); err == nil {
		t.Error("renaming to an invalid name must fail")
	}

	if err := c.renameRemote("prod", "production"); err != nil {
		t.Fatal(err)
	}

	if c.DefaultRemote != "production" || c.Remotes["production"].Addr != "https://h:1" {
		t.Errorf("after rename: %+v", c)
	}
}

func TestSocketPath(t *testing.T) {
	t.Setenv("LXD_DEPLOYD_DIR", "")
	if got := socketPath(unixAddr); got != "/var/lib/lxd-deployd/unix.socket" {
		t.Errorf("default socket: %q", got)
	}

	t.Setenv("LXD_DEPLOYD_DIR", "/tmp/d")
	if got := socketPath(unixAddr); got != "/tmp/d/unix.socket" {
		t.Errorf("socket under LXD_DEPLOYD_DIR: %q", got)
	}

	if got := socketPath("unix:///run/x.socket"); got != "/run/x.socket" {
		t.Errorf("explicit socket: %q", got)
	}
}

func TestConfigDir(t *testing.T) {
	t.Setenv("LXD_DEPLOY_CONF", "/tmp/conf")
	dir, err := configDir()
	if err != nil || dir != "/tmp/conf" {
		t.Errorf("LXD_DEPLOY_CONF: %q %v", dir, err)
	}

	t.Setenv("LXD_DEPLOY_CONF", "")
	t.Setenv("HOME", "/home/u")
	dir, err = configDir()
	if err != nil || dir != "/home/u/.config/lxd-deploy" {
		t.Errorf("default: %q %v", dir, err)
	}
}
