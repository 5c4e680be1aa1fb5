package cluster

import (
	"context"
	"database/sql"
	"strings"
	"time"

	"github.com/gorilla/websocket"

	"github.com/lxd-deployd/lxd-deployd/db"
	"github.com/lxd-deployd/lxd-deployd/lxd-deployd/events"
)

// Events reach every member through the members' own event streams, as LXD relays them:
// each member keeps a websocket open to every other online member and hands what arrives
// to its listeners, with the location of the member it happened on. Events are many
// (every operation update), short-lived and worth nothing once delivered: putting them
// through raft would make each one a replicated write, and a dqlite fan-out would need
// polling. A member that is down misses nothing it could have relayed: it had no
// listeners either.

// MemberEventsPath is where a member serves its own events to the other members.
const MemberEventsPath = "/internal/cluster/events"

// relayRefresh is how often the list of members to relay from is read again.
const relayRefresh = 2 * time.Second

// EventRelay hands the events of other members to this member's listeners
// (*events.Server).
type EventRelay interface {
	Relay(event events.Event)
}

// RelayEvents keeps an event stream open to every other online member until ctx ends,
// handing what arrives to relay. Only a clustered member has the credentials to.
func (m *Member) RelayEvents(ctx context.Context, relay EventRelay) {
	streams := map[string]context.CancelFunc{} // "name address" -> stop
	defer func() {
		for _, stop := range streams {
			stop()
		}
	}()

	for {
		var members []db.Member
		err := m.db.Transaction(ctx, func(ctx context.Context, tx *sql.Tx) error {
			var err error
			members, err = db.GetMembers(ctx, tx)
			return err
		})
		if err == nil {
			wanted := map[string]db.Member{}
			for _, member := range members {
				address, _, _ := strings.Cut(member.Address, ",")
				if member.Name != m.name && address != "" && time.Since(member.HeartbeatAt) < OfflineAfter {
					member.Address = address
					wanted[member.Name+" "+address+" "+member.CertificateFingerprint] = member
				}
			}

			for key, stop := range streams {
				if _, ok := wanted[key]; !ok {
					stop()
					delete(streams, key)
				}
			}

			for key, member := range wanted {
				if _, ok := streams[key]; !ok {
					streamCtx, stop := context.WithCancel(ctx)
					streams[key] = stop
					go m.relayFrom(streamCtx, member.Address, member.CertificateFingerprint, relay)
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
func (m *Member) relayFrom(ctx context.Context, address string, fingerprint string, relay EventRelay) {
	dialer := websocket.Dialer{
		HandshakeTimeout: 10 * time.Second,
		TLSClientConfig:  m.identity.memberTLS(fingerprint),
	}

	for ctx.Err() == nil {
		conn, _, err := dialer.DialContext(ctx, "wss://"+address+MemberEventsPath, nil)
		if err == nil {
			stop := context.AfterFunc(ctx, func() { _ = conn.Close() })
			for {
				var event events.Event
				err = conn.ReadJSON(&event)
				if err != nil {
					break
				}

				relay.Relay(event)
			}

			stop()
			_ = conn.Close()
		}

		if ctx.Err() == nil {
			m.logger.Debug("member event stream ended", "address", address, "err", err)
		}

		select {
		case <-ctx.Done():
		case <-time.After(time.Second):
		}
	}
}
