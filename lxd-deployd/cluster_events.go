package main

import (
	"context"
	"database/sql"
	"net/http"
	"strings"
	"time"

	"github.com/gorilla/websocket"

	"github.com/lxd-deployd/lxd-deployd/db"
	"github.com/lxd-deployd/lxd-deployd/lxd-deployd/auth"
	"github.com/lxd-deployd/lxd-deployd/lxd-deployd/events"
	"github.com/lxd-deployd/lxd-deployd/lxd-deployd/response"
)

// Events reach every member through the members' own event streams, as LXD relays them:
// each member keeps a websocket open to every other online member and hands what arrives
// to its listeners, with the location of the member it happened on. Events are many
// (every operation update), short-lived and worth nothing once delivered: putting them
// through raft would make each one a replicated write, and a dqlite fan-out would need
// polling. A member that is down misses nothing it could have relayed: it had no
// listeners either.

// memberEventsPath is where a member serves its own events to the other members.
const memberEventsPath = "/internal/cluster/events"

// relayRefresh is how often the list of members to relay from is read again.
const relayRefresh = 2 * time.Second

// allowMember lets through only another member itself: a caller presenting a current
// member's own certificate, not a request it forwards for someone.
func (a clusterAPI) allowMember(r *http.Request) error {
	caller := auth.CallerFromContext(r.Context())
	if a.identity == nil || !caller.Trusted || caller.Protocol != auth.ProtocolTLS || caller.CertificateType != auth.CertificateTypeMember || caller.Via != "" {
		return forbidden("only cluster members may use %s", r.URL.Path)
	}

	return nil
}

// memberEvents streams this member's own events to a member relaying them.
func (a clusterAPI) memberEvents(r *http.Request) response.Response {
	return response.ManualResponse(func(w http.ResponseWriter) error {
		return a.events.ServeMember(w, r)
	})
}

// relayEvents keeps an event stream open to every other online member until ctx ends.
func (d *daemon) relayEvents(ctx context.Context) {
	streams := map[string]context.CancelFunc{} // "name address" -> stop
	defer func() {
		for _, stop := range streams {
			stop()
		}
	}()

	for {
		var members []db.Member
		err := d.db.Transaction(ctx, func(ctx context.Context, tx *sql.Tx) error {
			var err error
			members, err = db.GetMembers(ctx, tx)
			return err
		})
		if err == nil {
			wanted := map[string]db.Member{}
			for _, m := range members {
				address, _, _ := strings.Cut(m.Address, ",")
				if m.Name != d.member && address != "" && time.Since(m.HeartbeatAt) < offlineAfter {
					m.Address = address
					wanted[m.Name+" "+address+" "+m.CertificateFingerprint] = m
				}
			}

			for key, stop := range streams {
				if _, ok := wanted[key]; !ok {
					stop()
					delete(streams, key)
				}
			}

			for key, m := range wanted {
				if _, ok := streams[key]; !ok {
					streamCtx, stop := context.WithCancel(ctx)
					streams[key] = stop
					go d.relayFrom(streamCtx, m.Address, m.CertificateFingerprint)
				}
			}
		}

		select {
		case <-ctx.Done():
			return
		case <-time.After(relayRefresh):
		}
	}
}

// relayFrom relays the events of the member at address, whose own certificate has the
// fingerprint, reconnecting until ctx ends.
func (d *daemon) relayFrom(ctx context.Context, address string, fingerprint string) {
	dialer := websocket.Dialer{
		HandshakeTimeout: 10 * time.Second,
		TLSClientConfig:  d.identity.memberTLS(fingerprint),
	}

	for ctx.Err() == nil {
		conn, _, err := dialer.DialContext(ctx, "wss://"+address+memberEventsPath, nil)
		if err == nil {
			stop := context.AfterFunc(ctx, func() { _ = conn.Close() })
			for {
				var event events.Event
				err = conn.ReadJSON(&event)
				if err != nil {
					break
				}

				d.events.Relay(event)
			}

			stop()
			_ = conn.Close()
		}

		if ctx.Err() == nil {
			d.logger.Debug("member event stream ended", "address", address, "err", err)
		}

		select {
		case <-ctx.Done():
		case <-time.After(time.Second):
		}
	}
}
