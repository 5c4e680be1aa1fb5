// Package haproxy is the front door's HAProxy driver (issue 35): a private HAProxy the
// daemon runs and supervises (Private), or an operator's HAProxy driven through its admin
// socket (Operator). Servers change through the runtime API, never a reload; a private
// door reloads (master-worker, listeners handed over) only when a frontend comes or goes.
package haproxy

import (
	"fmt"
	"strings"
)

// serverPrefix marks the servers a door owns: an operator's backend may hold servers of
// its own, which the door never touches.
const serverPrefix = "ld-"

// encodeKey turns a frontend key ("project/deployment/shape") into a reversible HAProxy
// proxy name fragment: HAProxy allows [A-Za-z0-9-_.:] in names; '_' escapes the rest.
func encodeKey(key string) string {
	var b strings.Builder
	for i := 0; i < len(key); i++ {
		c := key[i]
		switch {
		case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c >= '0' && c <= '9', c == '-', c == '.':
			b.WriteByte(c)
		default:
			fmt.Fprintf(&b, "_%02x", c)
		}
	}
	return b.String()
}

// decodeKey reverses encodeKey; ok is false for a name the door did not make.
func decodeKey(s string) (string, bool) {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] != '_' {
			b.WriteByte(s[i])
			continue
		}
		if i+2 >= len(s) {
			return "", false
		}
		var c byte
		if _, err := fmt.Sscanf(s[i+1:i+3], "%02x", &c); err != nil {
			return "", false
		}
		b.WriteByte(c)
		i += 2
	}
	return b.String(), true
}

// frontendName and backendName are a private door's proxy names for a frontend key.
func frontendName(key string) string { return "fe_" + encodeKey(key) }
func backendName(key string) string  { return "be_" + encodeKey(key) }

// keyOfBackend is the frontend key of a private door's backend, ok false for any other.
func keyOfBackend(name string) (string, bool) {
	if !strings.HasPrefix(name, "be_") {
		return "", false
	}
	return decodeKey(strings.TrimPrefix(name, "be_"))
}

// serverName is the door's name for an instance's server; instanceOf reverses it.
func serverName(instance string) string { return serverPrefix + instance }

func instanceOf(server string) (string, bool) {
	if !strings.HasPrefix(server, serverPrefix) {
		return "", false
	}
	return strings.TrimPrefix(server, serverPrefix), true
}
