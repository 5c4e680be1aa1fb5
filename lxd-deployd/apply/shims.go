package apply

import (
	"context"
	"database/sql"
	"time"

	"github.com/lxd-deployd/lxd-deployd/db"
	"github.com/lxd-deployd/lxd-deployd/lxd-deployd/refs"
	"github.com/lxd-deployd/lxd-deployd/lxd-deployd/reporter"
	"github.com/lxd-deployd/lxd-deployd/shared/api"
	"github.com/lxd-deployd/lxd-deployd/shared/templates"
)

// What the apply engine needs of the rest of the daemon, as rollout/shims.go (after Nomad's
// nomad/deployment_watcher_shims.go) keeps the rollout engine apart: the engine sees the
// database, the fleet, the template expander and the reporter only through these
// interfaces, which the daemon fills once. Package main never reaches inside.

// Store runs transactions against the cluster's database (*db.Cluster).
type Store interface {
	Transaction(ctx context.Context, f func(ctx context.Context, tx *sql.Tx) error) error
}

// Fleet deletes the instances of the shapes a config drops when the apply is forced
// (*fleet.Fleet): in LXD, as rows, with their activity entries.
type Fleet interface {
	DeleteWithInstances(ctx context.Context, by api.DeploymentRequestor, what string, force bool, instances func(ctx context.Context, tx *sql.Tx) ([]db.Instance, error), deleteRecord func(ctx context.Context, tx *sql.Tx) error) error
}

// Expander expands templated configs. The daemon's is an isolate.Runner (Isolated): every
// expansion runs in a child process with memory, CPU and time limits, so that template code
// (which anyone controlling a template in a configured registry writes) never runs in the
// daemon's address space. Unit tests may pass InProcess.
type Expander interface {
	Expand(ctx context.Context, config []byte, imports map[string][]byte, opts templates.Options) (*templates.Expansion, error)
}

// Reporter tells /1.0/events, the log and the governor's webhook what an apply did
// (*reporter.Reporter).
type Reporter interface {
	Send(by api.DeploymentRequestor, deploymentID int64, event reporter.Event)
	ShapeCreated(ctx context.Context, by api.DeploymentRequestor, ref refs.DeploymentRef, deploymentID int64, name string, put api.DeploymentShapePut)
	ShapeUpdated(ctx context.Context, by api.DeploymentRequestor, ref refs.DeploymentRef, deploymentID int64, before api.DeploymentShape, put api.DeploymentShapePut)
	ShapeDeleted(by api.DeploymentRequestor, ref refs.DeploymentRef, deploymentID int64, name string)
	ShapeRevised(by api.DeploymentRequestor, ref refs.ShapeRef, deploymentID int64, revision int, rollout int)
}

// Metrics counts the time expansions take (*metrics.Metrics, which may be nil).
type Metrics interface {
	TemplateExpansion(took time.Duration)
}
