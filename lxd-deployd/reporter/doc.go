// Package reporter names the lifecycle actions the daemon reports, in LXD's
// "<object>-<verb>" style, and builds their events: each typed action makes its own event
// URL from a ref, as canonical/lxd's lxd/lifecycle package does, so no caller writes a
// source URL by hand.
//
// It holds no pointer to any engine: the engines (package fleet) see the sender through an
// interface they declare (fleet.Reporter), and package main's reporter sends the events on
// /1.0/events, to the log and to the governor's webhook.
package reporter
