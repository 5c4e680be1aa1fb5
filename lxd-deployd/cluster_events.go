package main

import (
	"context"
	"crypto/tls"
	"crypto/x509"
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

// allowMember lets through only another member (a caller presenting the cluster
// certificate).
func (a clusterAPI) allowMember(r *http.Request) error {
	caller := auth.CallerFromContext(r.Context())
	if a.identity == nil || !caller.Trusted || caller.Protocol != auth.ProtocolTLS || caller.Fingerprint != a.identity.fingerprint {
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
			wanted := map[string]string{}
			for _, m := range members {
				address, _, _ := strings.Cut(m.Address, ",")
				if m.Name != d.member && address != "" && time.Since(m.HeartbeatAt) < offlineAfter {
					wanted[m.Name+" "+address] = address
				}
			}

			for key, stop := range streams {
				if _, ok := wanted[key]; !ok {
					stop()
					delete(streams, key)
				}
			}

			for key, address := range wanted {
				if _, ok := streams[key]; !ok {
					streamCtx, stop := context.WithCancel(ctx)
					streams[key] = stop
					go d.relayFrom(streamCtx, address)
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

// relayFrom relays the events of the member at address, reconnecting until ctx ends.
func (d *daemon) relayFrom(ctx context.Context, address string) {
	pool := x509.NewCertPool()
	pool.AddCert(d.identity.leaf)
	dialer := websocket.Dialer{
		HandshakeTimeout: 10 * time.Second,
		TLSClientConfig: &tls.Config{
			MinVersion:   tls.VersionTLS13,
			ServerName:   clusterName,
			RootCAs:      pool,
			Certificates: []tls.Certificate{d.identity.pair},
		},
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
