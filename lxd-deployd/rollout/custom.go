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
	"net/url"
	"path"
	"strings"
	"sync"
	"time"

	lxd "github.com/canonical/lxd/client"
	lxdapi "github.com/canonical/lxd/shared/api"

	"github.com/lxd-deployd/lxd-deployd/db"
	"github.com/lxd-deployd/lxd-deployd/lxd-deployd/fleet"
	"github.com/lxd-deployd/lxd-deployd/lxd-deployd/refs"
	"github.com/lxd-deployd/lxd-deployd/lxd-deployd/reporter"
	"github.com/lxd-deployd/lxd-deployd/shared/api"
	"github.com/lxd-deployd/lxd-deployd/shared/validate"
)

// The custom strategy (seed 002, "Deployer Image"): a rollout launches a transient
// deployer instance from the admin's image, hands it the rollout and a credential good
// for the governor API on the shape only, and follows it: exit code 0 completes the
// rollout, anything else fails it. The deployer is no instance of the shape (no instance
// row, no user.lxd-deployd.deployment key), so it never counts toward the bounds and
// reconcile never adopts or reports it; what it launches and deletes goes through the same
// bound checks as any governor's calls.
//
// Every decision is made from rows, as for the built-in strategies: the deployer's row is
// written before LXD makes it; a follower goroutine records its end (exit code and output)
// and the next step decides; a sweep deletes deployers whose work is over, whatever ended
// it (exit, failure, cancel, timeout, deadline, forced shape delete, a daemon restart).

const (
	// CredentialPrefix starts every deployer credential, which is
	// <prefix><rollout id>-<64 hex digits>: governor tokens (JWTs) never start so.
	CredentialPrefix = "lxdd-deployer-"

	// ConfigDeployer marks a deployer instance in LXD: <deployment>/<shape>/<rollout>.
	ConfigDeployer = "user.lxd-deployd.deployer"

	// deployerOutputLimit is how much of a deployer's output is kept (its end).
	deployerOutputLimit = 64 << 10
)

// UsesDeployer says whether a rollout is carried out by a deployer: a custom one, except
// the revert of a failed or aborted rollout, which is a built-in rolling rollout (the
// deployer that just failed is not trusted to undo its own work).
func UsesDeployer(r db.Rollout) bool {
	return r.Strategy.Strategy == api.RolloutCustom && r.Cause != CauseAutoRevert && r.Cause != CauseAbort
}

// DeployerName names a rollout's deployer: <shape>-d<rollout>-<6 hex>, within 63 characters.
func DeployerName(shape string, rollout int) string {
	suffix := make([]byte, 3)
	_, _ = rand.Read(suffix)
	tail := fmt.Sprintf("-d%d-%s", rollout, hex.EncodeToString(suffix))
	if len(shape)+len(tail) > 63 {
		shape = shape[:63-len(tail)]
	}

	return shape + tail
}

// ParseCredential splits a deployer credential into its rollout id and secret.
func ParseCredential(raw string) (int64, string, bool) {
	rest, found := strings.CutPrefix(raw, CredentialPrefix)
	if !found {
		return 0, "", false
	}

	id, secret, found := strings.Cut(rest, "-")
	var n int64
	_, err := fmt.Sscan(id, &n)
	if !found || err != nil || n <= 0 || len(secret) != 64 {
		return 0, "", false
	}

	return n, rest[len(id)+1:], true
}

// deployerFollows is the set of rollouts whose deployer a goroutine of this daemon starts
// or follows, so that each tick does not start another.
type deployerFollows struct {
	mu  sync.Mutex
	ids map[int64]bool
}

// take marks id followed; false when it already was.
func (f *deployerFollows) take(id int64) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.ids == nil {
		f.ids = map[int64]bool{}
	}

	if f.ids[id] {
		return false
	}

	f.ids[id] = true
	return true
}

func (f *deployerFollows) release(id int64) {
	f.mu.Lock()
	defer f.mu.Unlock()
	delete(f.ids, id)
}

// stepCustom moves a custom rollout: start its deployer, follow it, judge its end, and
// hold it to rollout.custom.timeout and rollout.progress_deadline.
func (e *Engine) stepCustom(ctx context.Context, client lxd.InstanceServer, r db.Rollout) error {
	v, err := e.observe(ctx, client, r)
	if err != nil {
		return err
	}

	var d *db.Deployer
	err = e.db.Transaction(ctx, func(ctx context.Context, tx *sql.Tx) error {
		d, err = db.GetDeployer(ctx, tx, r.ID)
		return err
	})
	if err != nil {
		return err
	}

	if d == nil {
		return e.launchDeployer(ctx, client, r, v)
	}

	if d.ExitCode != nil {
		if *d.ExitCode == 0 {
			return e.finish(ctx, r, api.RolloutComplete, fmt.Sprintf("deployer %s exited 0", d.Instance), reporter.RolloutCompleted)
		}

		return e.fail(ctx, r, fmt.Sprintf("deployer %s exited %d%s", d.Instance, *d.ExitCode, lastLine(d.Output)))
	}

	if d.Operation != "" && e.deployers.take(r.ID) {
		go e.follow(ctx, r, *d)
	}

	now := time.Now()
	timeout := validate.DeployerTimeout(r.Strategy.Custom)
	switch {
	case now.Sub(d.StartedAt) > timeout:
		e.endDeployer(ctx, client, *d, fmt.Sprintf("killed: it ran past rollout.custom.timeout (%s)", timeout))
		return e.fail(ctx, r, fmt.Sprintf("deployer %s ran past rollout.custom.timeout (%s): it was killed", d.Instance, timeout))
	case !v.progress && now.Sub(r.ProgressAt) > v.settings.ProgressDeadline:
		e.endDeployer(ctx, client, *d, fmt.Sprintf("killed: no progress for %s (rollout.progress_deadline)", v.settings.ProgressDeadline))
		return e.fail(ctx, r, fmt.Sprintf("no progress for %s (rollout.progress_deadline) while deployer %s ran: %d of %d instances updated, %d ready; it was killed",
			v.settings.ProgressDeadline, d.Instance, v.plan.Updated, v.plan.Updated+v.plan.Outdated, v.plan.Ready))
	case d.Operation == "" && !e.deployers.take(r.ID):
		return nil // still being started by this daemon
	case d.Operation == "":
		// Its command never started and nobody is starting it: the daemon that was
		// starting it stopped.
		e.deployers.release(r.ID)
		e.endDeployer(ctx, client, *d, "the daemon stopped before the deployer's command started")
		return e.fail(ctx, r, fmt.Sprintf("deployer %s never started its command (the daemon stopped meanwhile)", d.Instance))
	}

	// The deployer's launches are progress as a built-in strategy's are.
	v.plan.Phase = "deploy"
	err = e.recordStep(ctx, r, v, now)
	if errors.Is(err, errNothingToRecord) || errors.Is(err, db.ErrRolloutChanged) || errors.Is(err, db.ErrRolloutClaimLost) {
		return nil
	}

	if err == nil && v.progress {
		e.reporter.RolloutEvent(Requestor, refs.ShapeRef{DeploymentRef: refs.DeploymentRef{Project: r.Project, Name: r.Deployment}, Shape: r.Shape}, r.DeploymentID, r.Number, reporter.RolloutStep)
	}

	return err
}

// launchDeployer records the deployer and its credential, then makes it in LXD and starts
// its command in the background.
func (e *Engine) launchDeployer(ctx context.Context, client lxd.InstanceServer, r db.Rollout, v *rolloutView) error {
	if !e.deployers.take(r.ID) {
		return nil
	}

	secret := make([]byte, 32)
	_, _ = rand.Read(secret)
	credential := fmt.Sprintf("%s%d-%s", CredentialPrefix, r.ID, hex.EncodeToString(secret))
	_, plain, _ := ParseCredential(credential)
	d := db.Deployer{RolloutID: r.ID, Project: r.Project, Instance: DeployerName(r.Shape, r.Number), StartedAt: time.Now()}
	err := e.db.Transaction(ctx, func(ctx context.Context, tx *sql.Tx) error {
		err := e.claim.check(ctx, tx, r, d.StartedAt)
		if err != nil {
			return err
		}

		err = db.CreateDeployer(ctx, tx, r.ID, d.Project, d.Instance, plain, d.StartedAt)
		if err != nil {
			return err
		}

		phase := "deploy"
		err = db.UpdateRollout(ctx, tx, r.ID, api.RolloutRunning, db.RolloutUpdate{Phase: &phase, Progress: true}, d.StartedAt)
		if err != nil {
			return err
		}

		return fleet.RecordActivity(ctx, tx, r.DeploymentID, api.DeploymentActivity{Shape: r.Shape, Action: "rollout-step", Requestor: Requestor,
			Why: fmt.Sprintf("rollout %d: deployer %s launched from image %s", r.Number, d.Instance, r.Strategy.Custom.Image)})
	})
	if err != nil {
		e.deployers.release(r.ID)
		if errors.Is(err, db.ErrRolloutChanged) || errors.Is(err, db.ErrRolloutClaimLost) {
			return nil
		}

		return err
	}

	input := api.DeployerInput{Project: r.Project, Deployment: r.Deployment, Shape: r.Shape, Rollout: r.Number, Revision: v.shape.Revision, FromRevision: r.FromRevision, Socket: fleet.GovernorSocketInside, Credential: credential}
	go func() {
		err := e.startDeployer(ctx, client, r, d, input)
		if err != nil {
			if ctx.Err() == nil {
				e.logger.Warn("rollout: deployer did not start", "deployment", r.Deployment, "shape", r.Shape, "rollout", r.Number, "instance", d.Instance, "err", err)
				e.endDeployer(context.WithoutCancel(ctx), client, d, "could not start: "+err.Error())
			}

			e.deployers.release(r.ID)
			e.Poke()
			return
		}

		d.Operation = "started"
		e.follow(ctx, r, d)
	}()

	return nil
}

// startDeployer makes the deployer container with the governor socket, hands it its input
// (a file only root inside reads) and starts its command, recording LXD's operation.
func (e *Engine) startDeployer(ctx context.Context, client lxd.InstanceServer, r db.Rollout, d db.Deployer, input api.DeployerInput) error {
	c := client.UseProject(d.Project)
	custom := r.Strategy.Custom
	hostPath, err := e.sockets.AddInstance(d.Project, d.Instance)
	if err != nil {
		return err
	}

	source := lxdapi.InstanceSource{Type: "image", Alias: custom.Image}
	_, _, err = c.GetImageAlias(custom.Image)
	if err != nil {
		source = lxdapi.InstanceSource{Type: "image", Fingerprint: custom.Image}
	}

	req := lxdapi.InstancesPost{Name: d.Instance, Type: lxdapi.InstanceTypeContainer, Source: source,
		InstancePut: lxdapi.InstancePut{Config: map[string]string{ConfigDeployer: fmt.Sprintf("%s/%s/%d", r.Deployment, r.Shape, r.Number)}}}
	fleet.WithGovernorSocket(&req, hostPath)
	op, err := c.CreateInstance(req)
	if err == nil {
		err = op.WaitContext(ctx)
	}

	if err != nil {
		return fmt.Errorf("create deployer %s from image %q: %w", d.Instance, custom.Image, err)
	}

	start, err := c.UpdateInstanceState(d.Instance, lxdapi.InstanceStatePut{Action: "start", Timeout: -1}, "")
	if err == nil {
		err = start.WaitContext(ctx)
	}

	if err != nil {
		return fmt.Errorf("start deployer %s: %w", d.Instance, err)
	}

	data, err := json.Marshal(input)
	if err != nil {
		return err
	}

	// The directories may exist in the image already.
	for _, dir := range []string{path.Dir(path.Dir(api.DeployerFile)), path.Dir(api.DeployerFile)} {
		_ = c.CreateInstanceFile(d.Instance, dir, lxd.InstanceFileArgs{Type: "directory", Mode: 0o755, UID: 0, GID: 0})
	}

	err = c.CreateInstanceFile(d.Instance, api.DeployerFile, lxd.InstanceFileArgs{Content: strings.NewReader(string(data)), Type: "file", Mode: 0o400, UID: 0, GID: 0, WriteMode: "overwrite"})
	if err != nil {
		return fmt.Errorf("hand deployer %s its input (%s): %w", d.Instance, api.DeployerFile, err)
	}

	env := map[string]string{}
	for k, value := range custom.Environment {
		env[k] = value
	}

	env[api.DeployerFileEnv] = api.DeployerFile
	env["LXD_DEPLOYD_PROJECT"], env["LXD_DEPLOYD_DEPLOYMENT"], env["LXD_DEPLOYD_SHAPE"] = input.Project, input.Deployment, input.Shape
	env["LXD_DEPLOYD_ROLLOUT"], env["LXD_DEPLOYD_REVISION"] = fmt.Sprint(input.Rollout), fmt.Sprint(input.Revision)
	// Without websockets, with the output recorded in LXD's log files: the command runs
	// whether or not anyone is attached, and a restarted daemon follows its operation
	// again. (The client's ExecInstance would also open an event listener per call.)
	post := lxdapi.InstanceExecPost{Command: validate.DeployerCommand(custom), Environment: env, WaitForWS: false, RecordOutput: true}
	resp, _, err := c.RawQuery("POST", "/1.0/instances/"+url.PathEscape(d.Instance)+"/exec?project="+url.QueryEscape(d.Project), post, "")
	if err == nil && resp.Operation == "" {
		err = fmt.Errorf("LXD started no operation")
	}

	if err != nil {
		return fmt.Errorf("run %q in deployer %s: %w", strings.Join(validate.DeployerCommand(custom), " "), d.Instance, err)
	}

	opURL, _, _ := strings.Cut(resp.Operation, "?")
	return e.db.Transaction(context.WithoutCancel(ctx), func(ctx context.Context, tx *sql.Tx) error {
		return db.SetDeployerOperation(ctx, tx, r.ID, path.Base(opURL))
	})
}

// follow waits for a deployer's command to end and records how (its exit code and output),
// then pokes the engine, which judges the rollout. A deployer whose LXD operation is gone
// (LXD restarted, or no daemon followed it when it ended) ended unknown: -1.
func (e *Engine) follow(ctx context.Context, r db.Rollout, d db.Deployer) {
	defer e.deployers.release(r.ID)
	defer e.Poke()
	client, err := e.lxd.Client()
	if err != nil {
		return
	}

	// After a restart the deployer needs its socket back.
	_, err = e.sockets.AddInstance(d.Project, d.Instance)
	if err != nil {
		e.logger.Warn("rollout: deployer socket not restored", "instance", d.Instance, "err", err)
	}

	var opID string
	err = e.db.Transaction(ctx, func(ctx context.Context, tx *sql.Tx) error {
		row, err := db.GetDeployer(ctx, tx, r.ID)
		if err == nil && row != nil {
			opID = row.Operation
		}

		return err
	})
	if err != nil || opID == "" {
		return
	}

	c := client.UseProject(d.Project)
	for ctx.Err() == nil {
		op, _, err := c.GetOperationWait(opID, 30)
		if ctx.Err() != nil {
			return
		}

		if lxdapi.StatusErrorCheck(err, http.StatusNotFound) {
			e.endDeployer(ctx, client, d, "its LXD operation is gone: LXD restarted, or the deployer ended while no daemon followed it")
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

		output := deployerLogs(c, d.Instance, op.Metadata["output"])
		if !ok && op.Err != "" {
			output += "\n" + op.Err
		}

		e.recordEnd(ctx, d, code, output)
		return
	}
}

// recordEnd records a deployer's end and revokes its credential.
func (e *Engine) recordEnd(ctx context.Context, d db.Deployer, code int, output string) {
	if len(output) > deployerOutputLimit {
		output = output[len(output)-deployerOutputLimit:]
	}

	err := e.db.Transaction(context.WithoutCancel(ctx), func(ctx context.Context, tx *sql.Tx) error {
		_, err := db.EndDeployer(ctx, tx, d.RolloutID, code, output, time.Now())
		return err
	})
	if err != nil {
		e.logger.Warn("rollout: deployer end not recorded", "instance", d.Instance, "err", err)
	}
}

// endDeployer ends a deployer that did not end by itself: its output so far is kept, with
// why, and its exit code is -1. The sweep deletes it.
func (e *Engine) endDeployer(ctx context.Context, client lxd.InstanceServer, d db.Deployer, why string) {
	output := deployerLogs(client.UseProject(d.Project), d.Instance, nil)
	e.recordEnd(ctx, d, -1, strings.TrimRight(output, "\n")+"\n["+why+"]")
}

// deployerLogs reads a deployer's recorded output: the files an exec operation names, or
// else every exec log of the instance.
func deployerLogs(c lxd.InstanceServer, instance string, files any) string {
	var names []string
	named, _ := files.(map[string]any)
	for _, fd := range []string{"1", "2"} {
		file, _ := named[fd].(string)
		if file != "" {
			names = append(names, path.Base(file))
		}
	}

	if len(names) == 0 {
		all, err := c.GetInstanceLogfiles(instance)
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
		reader, err := c.GetInstanceLogfile(instance, name)
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

// sweepDeployers deletes the deployers whose work is over, however it ended, and revokes
// their credentials: each tick, so a daemon restart or a forced shape delete leaves none.
func (e *Engine) sweepDeployers(ctx context.Context, client lxd.InstanceServer) {
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
			e.endDeployer(ctx, client, d, "ended: its rollout is no longer running")
		}

		err = deleteDeployer(ctx, client.UseProject(d.Project), d.Instance)
		if err != nil {
			e.logger.Warn("rollout: deployer not deleted", "instance", d.Instance, "project", d.Project, "err", err)
			continue
		}

		e.sockets.RemoveInstance(d.Project, d.Instance)
		err = e.db.Transaction(ctx, func(ctx context.Context, tx *sql.Tx) error {
			return db.MarkDeployerDeleted(ctx, tx, d.RolloutID)
		})
		if err != nil {
			e.logger.Warn("rollout: deployer deletion not recorded", "instance", d.Instance, "err", err)
		}
	}
}

// deleteDeployer force-stops and deletes a deployer instance; one LXD does not have is gone.
// It only deletes an instance marked as a deployer.
func deleteDeployer(ctx context.Context, c lxd.InstanceServer, name string) error {
	instance, _, err := c.GetInstance(name)
	if lxdapi.StatusErrorCheck(err, http.StatusNotFound) {
		return nil
	}

	if err != nil {
		return err
	}

	if instance.Config[ConfigDeployer] == "" {
		return fmt.Errorf("LXD instance %s is not a deployer (no %s): left alone", name, ConfigDeployer)
	}

	if instance.StatusCode != lxdapi.Stopped {
		op, err := c.UpdateInstanceState(name, lxdapi.InstanceStatePut{Action: "stop", Force: true, Timeout: -1}, "")
		if err == nil {
			_ = op.WaitContext(ctx)
		}
	}

	op, err := c.DeleteInstance(name)
	if lxdapi.StatusErrorCheck(err, http.StatusNotFound) {
		return nil
	}

	if err != nil {
		return err
	}

	return op.WaitContext(ctx)
}

// lastLine is the last non-empty line of a deployer's output, for the rollout's reason.
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
