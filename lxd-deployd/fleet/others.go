package fleet

import (
	"time"

	"github.com/lxd-deployd/lxd-deployd/db"
)

// OthersGrace is how long a record another daemon left creating or deleting is assumed to
// be that daemon's work in progress.
const OthersGrace = 10 * time.Minute

// OthersInFlux reports whether a record is another member's launch or delete that may
// still be running: the member that changed it (owner) is online and has not restarted
// since (a heartbeat within offlineAfter), within the grace period. A dead or restarted member's work died with its process,
// so its records are repaired at once by whichever member reconciles.
func OthersInFlux(row db.Instance, owner string, members []db.Member, offlineAfter time.Duration, now time.Time) bool {
	inFlux := row.State == db.InstanceCreating || row.State == db.InstanceDeleting
	if !inFlux || row.Owner == owner || now.Sub(row.StateChangedAt) >= OthersGrace {
		return false
	}

	for _, m := range members {
		if m.DatabaseAddress == row.Owner {
			return now.Sub(m.HeartbeatAt) < offlineAfter && !m.StartedAt.After(row.StateChangedAt)
		}
	}

	// No member by that address: it was removed from the cluster, and stopped.
	return false
}
