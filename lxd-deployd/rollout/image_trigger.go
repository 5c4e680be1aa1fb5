package rollout

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"time"

	lxdapi "github.com/canonical/lxd/shared/api"

	"github.com/lxd-deployd/lxd-deployd/db"
	"github.com/lxd-deployd/lxd-deployd/lxd-deployd/loop"
	"github.com/lxd-deployd/lxd-deployd/lxd-deployd/refs"
	"github.com/lxd-deployd/lxd-deployd/lxd-deployd/reporter"
	"github.com/lxd-deployd/lxd-deployd/shared/api"
)

// imageWatcher is the image-change trigger: when the image alias a shape's template names
// points to a new image, the shape gets a revision (cause image-change) and, when the
// trigger is automatic, a rollout; shapes pinned or suspended by a rollback are skipped. It
// listens to LXD's image lifecycle events and then resolves each alias in use once (never
// one call per instance); a slow sweep catches changes made while it was not listening.
type imageWatcher struct {
	engine *Engine

	// wake's poke makes the watcher check now: a shape changed, so it learns the image its
	// alias names before that alias can move. (run has its own timer and event stream.)
	wake loop.Loop
}

// poke makes the watcher check the aliases now.
func (w *imageWatcher) poke() {
	w.wake.Poke()
}

// imageSweep is how often aliases are checked without an event.
const imageSweep = 30 * time.Second

func (w *imageWatcher) run(ctx context.Context) {
	events := make(chan struct{}, 1)
	var stream <-chan struct{} // closed when the event stream ends
	stop := func() {}          // ends the stream
	defer func() { stop() }()
	watching := false
	timer := time.NewTimer(time.Second)
	defer timer.Stop()
	for {
		// (Re)subscribe when LXD was away or dropped the stream; the sweep covers the gap.
		// The stream is open only while a shape watches its alias: LXD sends every
		// lifecycle event of every project on it, an instance-exec per exec health check.
		select {
		case <-stream:
			stream = nil
		default:
		}

		switch {
		case watching && stream == nil:
			streamCtx, cancel := context.WithCancel(ctx)
			stream, stop = w.listen(streamCtx, events), cancel
		case !watching && stream != nil:
			stop()
			stream = nil
		}

		select {
		case <-ctx.Done():
			return
		case <-events:
		case <-w.wake.Pokes():
		case <-timer.C:
			timer.Reset(imageSweep)
		}

		var err error
		watching, err = w.check(ctx)
		if err != nil && ctx.Err() == nil {
			w.engine.logger.Warn("image-change trigger", "err", err)
		}
	}
}

// listen subscribes to LXD's lifecycle events of every project on a websocket of its own,
// asking LXD for lifecycle events only: a rollout makes many operation and logging events,
// which this watcher has no use for and should not decode. It returns a channel closed
// when the stream ends, or nil when it could not subscribe.
func (w *imageWatcher) listen(ctx context.Context, events chan<- struct{}) <-chan struct{} {
	conn, err := w.engine.lxd.LifecycleEvents()
	if err != nil {
		return nil
	}

	done := make(chan struct{})
	go func() {
		select {
		case <-ctx.Done():
		case <-done:
		}

		_ = conn.Close()
	}()

	go func() {
		defer close(done)
		for {
			_, message, err := conn.ReadMessage()
			if err != nil {
				return
			}

			// Every exec check is an instance-exec lifecycle event: at 100 checks a second,
			// decoding each was 4% of the daemon's CPU. Only image events are decoded.
			if !bytes.Contains(message, []byte(`"image-`)) {
				continue
			}

			var event lxdapi.Event
			var lifecycle lxdapi.EventLifecycle
			if json.Unmarshal(message, &event) != nil || event.Type != lxdapi.EventTypeLifecycle || json.Unmarshal(event.Metadata, &lifecycle) != nil {
				continue
			}

			switch lifecycle.Action {
			case "image-created", "image-alias-created", "image-alias-updated", "image-alias-renamed", "image-refreshed":
				select {
				case events <- struct{}{}:
				default:
				}
			}
		}
	}()

	return done
}

// check resolves every alias an image-change shape names, once per project and alias, and
// revises the shapes whose alias moved; watching says whether any shape watches its alias.
func (w *imageWatcher) check(ctx context.Context) (watching bool, err error) {
	err = w.engine.lxd.Available()
	if err != nil {
		return true, nil // the shapes are read again once LXD is back
	}

	var watched []db.Shape
	projects := map[int64]string{}
	err = w.engine.db.Transaction(ctx, func(ctx context.Context, tx *sql.Tx) error {
		watched = nil
		all, err := db.GetShapes(ctx, tx, db.ShapeFilter{})
		if err != nil {
			return err
		}

		deployments, err := db.GetDeployments(ctx, tx, db.DeploymentFilter{})
		if err != nil {
			return err
		}

		suspended := map[int64]*api.DeploymentTriggersSuspended{}
		for _, d := range deployments {
			projects[d.ID] = d.Project
			suspended[d.ID] = d.TriggersSuspended
		}

		// A template that names a fingerprint (a rollback pinned it) is not watched: LXD
		// makes its instances from that image whatever the alias names. Nor is a shape
		// whose triggers are suspended: once resumed, a moved alias is a change.
		for _, s := range all {
			if WatchesAlias(s.Writable()) && !ImageTriggerSuspended(&s, suspended[s.DeploymentID]) {
				watched = append(watched, s)
			}
		}

		return nil
	})
	if err != nil || len(watched) == 0 {
		return err != nil, err
	}

	resolved := map[string]string{} // project/alias -> fingerprint
	for _, s := range watched {
		project := projects[s.DeploymentID]
		key := project + "/" + s.InstanceTemplate.Source.Alias
		fingerprint, ok := resolved[key]
		if !ok {
			alias, err := w.engine.lxd.ImageAlias(project, s.InstanceTemplate.Source.Alias)
			if err != nil {
				continue
			}

			fingerprint = alias.Target
			resolved[key] = fingerprint
		}

		if fingerprint == s.ImageFingerprint {
			continue
		}

		err = w.revise(ctx, s, project, fingerprint)
		if err != nil {
			w.engine.logger.Warn("image-change trigger", "shape", s.Name, "err", err)
		}
	}

	return true, nil
}

// revise records that a shape's alias now names fingerprint. The first sighting only
// records it; a change makes a revision (cause image-change), which starts the rollout.
func (w *imageWatcher) revise(ctx context.Context, s db.Shape, project string, fingerprint string) error {
	by := api.InternalRequestor("image-change")
	var out Revised
	var deployment string
	err := w.engine.db.Transaction(ctx, func(ctx context.Context, tx *sql.Tx) error {
		// A rollback (or an edit) since the shapes were read may have pinned, suspended or
		// moved the alias: the change is then no longer this trigger's to make.
		current, err := ShapeByID(ctx, tx, s.DeploymentID, s.ID)
		if err != nil {
			return err
		}

		suspended, err := db.GetDeploymentTriggersSuspended(ctx, tx, s.DeploymentID)
		if err != nil {
			return err
		}

		if !WatchesAlias(current.Writable()) || ImageTriggerSuspended(current, suspended) || !sameAlias(current.InstanceTemplate.Source, s.InstanceTemplate.Source) {
			return db.ErrShapeChanged
		}

		err = db.SetShapeImageFingerprint(ctx, tx, s.ID, s.ImageFingerprint, fingerprint)
		if err != nil {
			return err
		}

		// The first sighting is the image of the revision that named the alias.
		if s.ImageFingerprint == "" {
			return db.SetRevisionImage(ctx, tx, s.ID, current.Revision, fingerprint)
		}

		d, err := db.GetDeploymentRow(ctx, tx, s.DeploymentID)
		if err != nil {
			return err
		}

		deployment = d.Name
		out, err = RecordRevision(ctx, tx, s.DeploymentID, s.ID, &s, s.Writable(), RevisionArgs{Cause: CauseImageChange, By: by, Notes: "image " + fingerprint[:min(12, len(fingerprint))], Image: true, ImageFingerprint: fingerprint})
		return err
	})
	if errors.Is(err, db.ErrShapeChanged) {
		return nil
	}

	if err != nil || out.Revision == 0 {
		return err
	}

	ref := refs.ShapeRef{DeploymentRef: refs.DeploymentRef{Project: project, Name: deployment}, Shape: s.Name}
	w.engine.reporter.Send(by, s.DeploymentID, reporter.ShapeUpdated.Event(ref, nil))
	w.engine.fleet.RefillPools() // its pool is of the old image: remade at once

	if out.Rollout != 0 {
		w.engine.reporter.RolloutEvent(by, ref, s.DeploymentID, out.Rollout, reporter.RolloutStarted)
		w.engine.Poke()
	}

	return nil
}
