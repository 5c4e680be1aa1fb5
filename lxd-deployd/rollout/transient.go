package rollout

import (
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"path"
	"strings"
	"sync"
	"time"

	lxdapi "github.com/canonical/lxd/shared/api"

	"github.com/lxd-deployd/lxd-deployd/db"
	"github.com/lxd-deployd/lxd-deployd/lxd-deployd/backend"
	"github.com/lxd-deployd/lxd-deployd/lxd-deployd/fleet"
	"github.com/lxd-deployd/lxd-deployd/shared/api"
	"github.com/lxd-deployd/lxd-deployd/shared/validate"
)

// A rollout's transient instances: the deployer of a custom rollout, and the pre and post
// hooks of the built-in strategies. Each is recorded (with a hash of its credential) before
// LXD makes it, runs one command whose exit code decides, and is deleted by the sweep
// once its work is over. The engine drives them from their rows alone.

// transientSpec is what a transient instance runs.
type transientSpec struct {
	kind        string // db.KindDeployer, db.KindPre, db.KindPost
	image       string
	command     []string
	environment map[string]string
	timeout     time.Duration
}

// field is the rollout setting a transient comes from, for messages.
func (s transientSpec) field() string {
	if s.kind == db.KindDeployer {
		return "custom"
	}

	return s.kind
}

// label names a transient's kind in reasons and logs.
func label(kind string) string {
	if kind == db.KindDeployer {
		return "deployer"
	}

	return kind + " hook"
}

// specFor is a rollout's transient of a kind, from the settings recorded when it started.
func specFor(r db.Rollout, kind string) transientSpec {
	switch kind {
	case db.KindPre, db.KindPost:
		h := r.Strategy.Pre
		if kind == db.KindPost {
			h = r.Strategy.Post
		}

		timeout, err := validate.RolloutDuration(kind+".timeout", h.Timeout, validate.DefaultDeployerTimeout)
		if err != nil {
			timeout = validate.DefaultDeployerTimeout
		}

		return transientSpec{kind: kind, image: h.Image, command: h.Command, environment: h.Environment, timeout: timeout}
	}

	c := r.Strategy.Custom
	return transientSpec{kind: db.KindDeployer, image: c.Image, command: validate.DeployerCommand(c), environment: c.Environment, timeout: validate.DeployerTimeout(c)}
}

// transientName names a rollout's transient: <shape>-d<rollout>-<6 hex> for a deployer,
// <shape>-pre<rollout>-... and <shape>-post<rollout>-... for hooks, within 63 characters.
func transientName(shape string, rollout int, kind string) string {
	suffix := make([]byte, 3)
	_, _ = rand.Read(suffix)
	letter := "d"
	if kind != db.KindDeployer {
		letter = kind
	}

	tail := fmt.Sprintf("-%s%d-%s", letter, rollout, hex.EncodeToString(suffix))
	if len(shape)+len(tail) > 63 {
		shape = shape[:63-len(tail)]
	}

	return shape + tail
}

// transientFollows is the set of transients a goroutine of this daemon starts or follows,
// so that each tick does not start another.
type transientFollows struct {
	mu   sync.Mutex
	keys map[string]bool
}

func followKey(rolloutID int64, kind string) string {
	return fmt.Sprintf("%d/%s", rolloutID, kind)
}

// take marks key followed; false when it already was.
func (f *transientFollows) take(key string) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.keys == nil {
		f.keys = map[string]bool{}
	}

	if f.keys[key] {
		return false
	}

	f.keys[key] = true
	return true
}

func (f *transientFollows) release(key string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	delete(f.keys, key)
}

// Where a transient is.
type transientState int

const (
	transientRunning   transientState = iota // launched or running: the rollout waits
	transientSucceeded                       // exited 0
	transientEnded                           // failed: the rollout was failed (or that was tried: see the error)
)

// driveTransient moves a rollout's transient of spec's kind: launch it, follow it, hold it
// to its timeout (and a deployer to the progress deadline), and say how it ended.
func (e *Engine) driveTransient(ctx context.Context, client *backend.Conn, r db.Rollout, v *rolloutView, spec transientSpec) (transientState, *db.Deployer, error) {
	var d *db.Deployer
	err := e.db.Transaction(ctx, func(ctx context.Context, tx *sql.Tx) error {
		var err error
		d, err = db.GetDeployer(ctx, tx, r.ID, spec.kind)
		return err
	})
	if err != nil {
		return transientRunning, nil, err
	}

	if d == nil {
		return transientRunning, nil, e.launchTransient(ctx, client, r, v, spec)
	}

	what := label(spec.kind)
	if d.ExitCode != nil {
		if *d.ExitCode == 0 {
			return transientSucceeded, d, nil
		}

		return transientEnded, d, e.fail(ctx, r, fmt.Sprintf("%s %s exited %d%s", what, d.Instance, *d.ExitCode, lastLine(d.Output)))
	}

	key := followKey(r.ID, spec.kind)
	if d.Operation != "" && e.transients.take(key) {
		go e.follow(ctx, r, *d)
	}

	now := time.Now()
	switch {
	case now.Sub(d.StartedAt) > spec.timeout:
		e.endTransient(ctx, client, *d, fmt.Sprintf("killed: it ran past rollout.%s.timeout (%s)", spec.field(), spec.timeout))
		return transientEnded, d, e.fail(ctx, r, fmt.Sprintf("%s %s ran past rollout.%s.timeout (%s): it was killed", what, d.Instance, spec.field(), spec.timeout))
	case spec.kind == db.KindDeployer && !v.progress && now.Sub(r.ProgressAt) > v.settings.ProgressDeadline:
		e.endTransient(ctx, client, *d, fmt.Sprintf("killed: no progress for %s (rollout.progress_deadline)", v.settings.ProgressDeadline))
		return transientEnded, d, e.fail(ctx, r, fmt.Sprintf("no progress for %s (rollout.progress_deadline) while deployer %s ran: %d of %d instances updated, %d ready; it was killed",
			v.settings.ProgressDeadline, d.Instance, v.plan.Updated, v.plan.Updated+v.plan.Outdated, v.plan.Ready))
	case d.Operation == "" && !e.transients.take(key):
		return transientRunning, d, nil // still being started by this daemon
	case d.Operation == "":
		// Its command never started and nobody is starting it: the daemon that was
		// starting it stopped.
		e.transients.release(key)
		e.endTransient(ctx, client, *d, "the daemon stopped before its command started")
		return transientEnded, d, e.fail(ctx, r, fmt.Sprintf("%s %s never started its command (the daemon stopped meanwhile)", what, d.Instance))
	}

	return transientRunning, d, nil
}

// launchTransient records a transient and its credential, then makes it in LXD and starts
// its command in the background.
func (e *Engine) launchTransient(ctx context.Context, client *backend.Conn, r db.Rollout, v *rolloutView, spec transientSpec) error {
	key := followKey(r.ID, spec.kind)
	if !e.transients.take(key) {
		return nil
	}

	secret := make([]byte, 32)
	_, _ = rand.Read(secret)
	credential := fmt.Sprintf("%s%d-%s", CredentialPrefix, r.ID, hex.EncodeToString(secret))
	_, plain, _ := ParseCredential(credential)
	d := db.Deployer{RolloutID: r.ID, Kind: spec.kind, Project: r.Project, Instance: transientName(r.Shape, r.Number, spec.kind), StartedAt: time.Now()}
	err := e.db.Transaction(ctx, func(ctx context.Context, tx *sql.Tx) error {
		err := e.claim.check(ctx, tx, r, d.StartedAt)
		if err != nil {
			return err
		}

		err = db.CreateDeployer(ctx, tx, r.ID, spec.kind, d.Project, d.Instance, plain, d.StartedAt)
		if err != nil {
			return err
		}

		phase := "deploy"
		if spec.kind != db.KindDeployer {
			phase = spec.kind + "-hook"
		}

		err = db.UpdateRollout(ctx, tx, r.ID, api.RolloutRunning, db.RolloutUpdate{Phase: &phase, Progress: true}, d.StartedAt)
		if err != nil {
			return err
		}

		return fleet.RecordActivity(ctx, tx, r.DeploymentID, api.DeploymentActivity{Shape: r.Shape, Action: "rollout-step", Requestor: Requestor,
			Why: fmt.Sprintf("rollout %d: %s %s launched from image %s", r.Number, label(spec.kind), d.Instance, spec.image)})
	})
	if err != nil {
		e.transients.release(key)
		if errors.Is(err, db.ErrRolloutChanged) || errors.Is(err, db.ErrRolloutClaimLost) {
			return nil
		}

		return err
	}

	input := api.DeployerInput{Project: r.Project, Deployment: r.Deployment, Shape: r.Shape, Rollout: r.Number, Revision: v.shape.Revision, FromRevision: r.FromRevision, Socket: fleet.GovernorSocketInside, Credential: credential}
	if spec.kind != db.KindDeployer {
		input.Hook = spec.kind
	}

	go func() {
		err := e.startTransient(ctx, client, r, d, spec, input)
		if err != nil {
			if ctx.Err() == nil {
				e.logger.Warn("rollout: transient instance did not start", "kind", spec.kind, "deployment", r.Deployment, "shape", r.Shape, "rollout", r.Number, "instance", d.Instance, "err", err)
				e.endTransient(context.WithoutCancel(ctx), client, d, "could not start: "+err.Error())
			}

			e.transients.release(key)
			e.Poke()
			return
		}

		e.follow(ctx, r, d)
	}()

	return nil
}

// startTransient makes the container with the governor socket, hands it its input (a file
// only root inside reads) and starts its command, recording LXD's operation.
func (e *Engine) startTransient(ctx context.Context, client *backend.Conn, r db.Rollout, d db.Deployer, spec transientSpec, input api.DeployerInput) error {
	hostPath, err := e.sockets.AddInstance(d.Project, d.Instance)
	if err != nil {
		return err
	}

	source := backend.ImageSource(client, d.Project, spec.image)

	mark := fmt.Sprintf("%s/%s/%d", r.Deployment, r.Shape, r.Number)
	if spec.kind != db.KindDeployer {
		mark += "/" + spec.kind
	}

	req := lxdapi.InstancesPost{Name: d.Instance, Type: lxdapi.InstanceTypeContainer, Source: source, InstancePut: lxdapi.InstancePut{Config: map[string]string{ConfigDeployer: mark}}}
	fleet.WithGovernorSocket(&req, hostPath)
	err = backend.CreateStopped(ctx, client, d.Project, req)
	if err != nil {
		return fmt.Errorf("create %s %s from image %q: %w", label(spec.kind), d.Instance, spec.image, err)
	}

	err = backend.ChangeState(ctx, client, d.Project, d.Instance, lxdapi.InstanceStatePut{Action: "start", Timeout: -1})

	if err != nil {
		return fmt.Errorf("start %s %s: %w", label(spec.kind), d.Instance, err)
	}

	data, err := json.Marshal(input)
	if err != nil {
		return err
	}

	// The directories may exist in the image already.
	for _, dir := range []string{path.Dir(path.Dir(api.DeployerFile)), path.Dir(api.DeployerFile)} {
		_ = backend.MakeDirectory(client, d.Project, d.Instance, dir)
	}

	err = backend.WriteFile(client, d.Project, d.Instance, api.DeployerFile, string(data), 0o400)
	if err != nil {
		return fmt.Errorf("hand %s %s its input (%s): %w", label(spec.kind), d.Instance, api.DeployerFile, err)
	}

	env := map[string]string{}
	for k, value := range spec.environment {
		env[k] = value
	}

	env[api.DeployerFileEnv] = api.DeployerFile
	env["LXD_DEPLOYD_PROJECT"], env["LXD_DEPLOYD_DEPLOYMENT"], env["LXD_DEPLOYD_SHAPE"] = input.Project, input.Deployment, input.Shape
	env["LXD_DEPLOYD_ROLLOUT"], env["LXD_DEPLOYD_REVISION"], env["LXD_DEPLOYD_FROM_REVISION"] = fmt.Sprint(input.Rollout), fmt.Sprint(input.Revision), fmt.Sprint(input.FromRevision)
	if input.Hook != "" {
		env["LXD_DEPLOYD_HOOK"] = input.Hook
	}

	// Without websockets, with the output recorded in LXD's log files: the command runs
	// whether or not anyone is attached, and a restarted daemon follows its operation
	// again. (The client's ExecInstance would also open an event listener per call.)
	post := lxdapi.InstanceExecPost{Command: spec.command, Environment: env, WaitForWS: false, RecordOutput: true}
	operation, err := backend.StartExec(client, d.Project, d.Instance, post)
	if err == nil && operation == "" {
		err = fmt.Errorf("LXD started no operation")
	}

	if err != nil {
		return fmt.Errorf("run %q in %s %s: %w", strings.Join(spec.command, " "), label(spec.kind), d.Instance, err)
	}

	opURL, _, _ := strings.Cut(operation, "?")
	return e.db.Transaction(context.WithoutCancel(ctx), func(ctx context.Context, tx *sql.Tx) error {
		return db.SetDeployerOperation(ctx, tx, r.ID, spec.kind, path.Base(opURL))
	})
}

// follow waits for a transient's command to end and records how (its exit code and
// output), then pokes the engine, which judges the rollout. One whose LXD operation is gone
// (LXD restarted, or no daemon followed it when it ended) ended unknown: -1.
func (e *Engine) follow(ctx context.Context, r db.Rollout, d db.Deployer) {
	defer e.transients.release(followKey(r.ID, d.Kind))
	defer e.Poke()
	client, err := e.lxd.Conn()
	if err != nil {
		return
	}

	// After a restart it needs its socket back.
	_, err = e.sockets.AddInstance(d.Project, d.Instance)
	if err != nil {
		e.logger.Warn("rollout: transient's governor socket not restored", "instance", d.Instance, "err", err)
	}

	var opID string
	err = e.db.Transaction(ctx, func(ctx context.Context, tx *sql.Tx) error {
		row, err := db.GetDeployer(ctx, tx, r.ID, d.Kind)
		if err == nil && row != nil {
			opID = row.Operation
		}

		return err
	})
	if err != nil || opID == "" {
		return
	}

	for ctx.Err() == nil {
		op, err := backend.WaitOperation(client, d.Project, opID, 30)
		if ctx.Err() != nil {
			return
		}

		if lxdapi.StatusErrorCheck(err, http.StatusNotFound) {
			e.endTransient(ctx, client, d, "its LXD operation is gone: LXD restarted, or it ended while no daemon followed it")
			return
		}

		if err != nil {
			select {
			case <-ctx.Done():
			case <-time.After(2 * time.Second):
			}

			continue
		}

		if op.StatusCode == lxdapi.Running || op.StatusCode == lxdapi.Pending {
			continue
		}

		code := -1
		ret, ok := op.Metadata["return"].(float64)
		if ok {
			code = int(ret)
		}

		output := transientLogs(client, d.Project, d.Instance, op.Metadata["output"])
		if !ok && op.Err != "" {
			output += "\n" + op.Err
		}

		e.recordEnd(ctx, d, code, output)
		return
	}
}

// recordEnd records a transient's end and revokes its credential. An exit 0 is progress: a
// pre hook's end must not count against the progress deadline.
func (e *Engine) recordEnd(ctx context.Context, d db.Deployer, code int, output string) {
	if len(output) > deployerOutputLimit {
		output = output[len(output)-deployerOutputLimit:]
	}

	err := e.db.Transaction(context.WithoutCancel(ctx), func(ctx context.Context, tx *sql.Tx) error {
		now := time.Now()
		ended, err := db.EndDeployer(ctx, tx, d.RolloutID, d.Kind, code, output, now)
		if err != nil || !ended || code != 0 {
			return err
		}

		err = db.UpdateRollout(ctx, tx, d.RolloutID, api.RolloutRunning, db.RolloutUpdate{Progress: true}, now)
		if errors.Is(err, db.ErrRolloutChanged) {
			return nil
		}

		return err
	})
	if err != nil {
		e.logger.Warn("rollout: end of transient instance not recorded", "instance", d.Instance, "err", err)
	}
}

// endTransient ends a transient that did not end by itself: its output so far is kept,
// with why, and its exit code is -1. The sweep deletes it.
func (e *Engine) endTransient(ctx context.Context, client *backend.Conn, d db.Deployer, why string) {
	output := transientLogs(client, d.Project, d.Instance, nil)
	e.recordEnd(ctx, d, -1, strings.TrimRight(output, "\n")+"\n["+why+"]")
}

// transientLogs reads a transient's recorded output: the files an exec operation names, or
// else every exec log of the instance.
func transientLogs(c *backend.Conn, project string, instance string, files any) string {
	var names []string
	named, _ := files.(map[string]any)
	for _, fd := range []string{"1", "2"} {
		file, _ := named[fd].(string)
		if file != "" {
			names = append(names, path.Base(file))
		}
	}

	if len(names) == 0 {
		all, err := backend.LogFiles(c, project, instance)
		if err != nil {
			return ""
		}

		for _, file := range all {
			if strings.HasPrefix(path.Base(file), "exec_") {
				names = append(names, path.Base(file))
			}
		}
	}

	var out strings.Builder
	for _, name := range names {
		reader, err := backend.LogFile(c, project, instance, name)
		if err != nil {
			continue
		}

		buf := make([]byte, deployerOutputLimit)
		for out.Len() < 4*deployerOutputLimit {
			n, err := reader.Read(buf)
			out.Write(buf[:n])
			if err != nil {
				break
			}
		}

		_ = reader.Close()
	}

	return out.String()
}

// sweepTransients deletes the transients whose work is over, however it ended, and revokes
// their credentials: each tick, so a daemon restart or a forced shape delete leaves none.
func (e *Engine) sweepTransients(ctx context.Context, client *backend.Conn) {
	var done []db.Deployer
	err := e.db.Transaction(ctx, func(ctx context.Context, tx *sql.Tx) error {
		var err error
		done, err = db.GetDeployersToDelete(ctx, tx)
		return err
	})
	if err != nil {
		return
	}

	for _, d := range done {
		if d.ExitCode == nil {
			e.endTransient(ctx, client, d, "ended: its rollout is no longer running")
		}

		err = deleteTransient(ctx, client, d.Project, d.Instance)
		if err != nil {
			e.logger.Warn("rollout: transient instance not deleted", "instance", d.Instance, "project", d.Project, "err", err)
			continue
		}

		e.sockets.RemoveInstance(d.Project, d.Instance)
		err = e.db.Transaction(ctx, func(ctx context.Context, tx *sql.Tx) error {
			return db.MarkDeployerDeleted(ctx, tx, d.RolloutID, d.Kind)
		})
		if err != nil {
			e.logger.Warn("rollout: deletion of transient instance not recorded", "instance", d.Instance, "err", err)
		}
	}
}

// deleteTransient force-stops and deletes a transient instance; one LXD does not have is
// gone. It only deletes an instance marked as a transient (ConfigDeployer).
func deleteTransient(ctx context.Context, c *backend.Conn, project string, name string) error {
	instance, _, err := backend.ReadInstance(c, project, name)
	if lxdapi.StatusErrorCheck(err, http.StatusNotFound) {
		return nil
	}

	if err != nil {
		return err
	}

	if instance.Config[ConfigDeployer] == "" {
		return fmt.Errorf("LXD instance %s is not a rollout's transient instance (no %s): left alone", name, ConfigDeployer)
	}

	if instance.StatusCode != lxdapi.Stopped {
		_ = backend.ChangeState(ctx, c, project, name, lxdapi.InstanceStatePut{Action: "stop", Force: true, Timeout: -1})
	}

	err = backend.DeleteOnly(ctx, c, project, name)
	if lxdapi.StatusErrorCheck(err, http.StatusNotFound) {
		return nil
	}

	return err
}

// lastLine is the last non-empty line of a transient's output, for the rollout's reason.
func lastLine(output string) string {
	lines := strings.Split(strings.TrimSpace(output), "\n")
	last := strings.TrimSpace(lines[len(lines)-1])
	if last == "" {
		return ""
	}

	if len(last) > 200 {
		last = last[:200] + "..."
	}

	return ": " + last
}
