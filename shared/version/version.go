// Package version holds the version of lxd-deployd, shared by the daemon and the CLI.
package version

// Version of lxd-deployd.
const Version = "0.1.0"
