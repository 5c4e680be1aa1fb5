// Package rest is the daemon's HTTP plumbing, below the route table and the handlers of
// package main: the Endpoint and Action types the route table is made of and the router that
// serves them behind authentication and access checks (routing.go); request parsing (bodies
// with a size limit, path names, ?project=, ?recursion=, ?filter=) and the errors handlers
// answer with (request.go, filter.go); collection listings (list.go) and the response edge of
// secret redaction (redact.go); and what wraps every listener: request ids, per-request
// loggers and metrics (observe.go), handler panics (panics.go), the server's own errors in
// the LXD envelope (envelope_conn.go), HTTPS connection budgets (conn_limits.go) and slow
// clients (slow_clients.go). It holds no engine and reads no database.
package rest
