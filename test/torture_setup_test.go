package test

import (
	"context"
	"fmt"
	"math/rand"
	"testing"
	"time"

	lxdapi "github.com/canonical/lxd/shared/api"

	"github.com/lxd-deployd/lxd-deployd/client"
	"github.com/lxd-deployd/lxd-deployd/shared/api"
	"github.com/lxd-deployd/lxd-deployd/test/lxdtest"
)

// The shapes of a torture run, each with the operations that reach it (torture_ops_test.go):
//
//	churn  governor launches and deletes at both bounds
//	roll   a steady size of rollSize, PUT/PATCH template changes, rollouts of every strategy
//	heal   health checks with autohealing, instances made unhealthy
//	hooks  a terminate hook, ended by continue or abandon
//	pool   a warm pool that launches take from
//	broken an image without /sbin/init: every launch fails to start
var tortureShapes = map[string]tortureShape{
	"churn":  {min: 1, max: 3},
	"roll":   {min: 0, max: rollSize + 2}, // rollSize + 1 when issue 19.1 is tried: see tightRoll
	"heal":   {min: 0, max: 2},
	"hooks":  {min: 0, max: 2},
	"pool":   {min: 0, max: 2},
	"broken": {min: 0, max: 2},
}

// rollSize is how many instances shape roll keeps; only rollouts replace them.
const rollSize = 3

// noInitImage is the alias of a busybox image whose /sbin/init is gone.
const noInitImage = "noinit"

func newTorture(t *testing.T, cfg tortureConfig) *torture {
	shapes := map[string]tortureShape{}
	for name, shape := range tortureShapes {
		shapes[name] = shape
	}

	if tightRoll(cfg.ops) {
		shapes["roll"] = tortureShape{min: 0, max: rollSize + 1}
		t.Logf("torture: issue 19.1 operations run, so roll's rollouts surge to scaling_maximum %d", rollSize+1)
	}

	private := lxdtest.Start(t)
	tt := &torture{
		t:              t,
		cfg:            cfg,
		rng:            rand.New(rand.NewSource(cfg.seed)),
		lxd:            private,
		lxdConn:        private.Client(t),
		sampleConn:     private.Client(t),
		daemonArgs:     []string{"--reconcile-interval", "1s", "--lxd-poll-interval", "5s"}, // LXD probed at the daemon's default: issue 31's faults
		shapes:         shapes,
		violations:     map[string][]string{},
		violationCount: map[string]int{},
		opCounts:       map[string]int{},
		mostSeen:       map[string]int{},
		pendingHook:    map[string]*client.Operation{},
		sick:           map[string]bool{},
	}

	tt.publishNoInitImage()
	// The daemon talks to LXD through the slow-LXD proxy, which the platform operations
	// turn on and off; the run's own connections go to LXD directly.
	tt.startPlatform()
	tt.d = startDaemon(t, daemonOptions{LXDSocket: tt.platform.proxy.Socket, ExtraArgs: tt.daemonArgs})
	waitLXDOnline(t, tt.d)
	tt.admin = tt.d.Unix(t)
	tt.watcher = tt.d.Unix(t)
	// Every revision kept, so that the end of the run can find each accepted change's.
	dep := api.DeploymentsPost{DeploymentPost: api.DeploymentPost{Name: "dep1"}}
	dep.Config = map[string]string{"revisions.keep": "10000"}
	must(t, tt.admin.CreateDeployment(dep))
	for _, name := range []string{"churn", "roll", "heal", "hooks", "pool", "broken"} {
		shape := tt.shapes[name]
		post := webShape(name, shape.min, shape.max)
		post.InstanceTemplate.Config = map[string]string{"user.v": "0"}
		switch name {
		case "roll":
			post.Rollout = api.DeploymentShapeRollout{MaxSurge: "1", MaxUnavailable: "0", MinReady: "1s"}
		case "heal":
			post.Health = &api.DeploymentShapeHealth{Command: []string{"/bin/sh", "-c", "test ! -f /sick"}, Interval: "1s", Timeout: "3s", Grace: "1s", UnhealthyThreshold: 2, Replace: true}
		case "hooks":
			// Long enough that only the run's continue or abandon ends a wait.
			post.Hooks = &api.DeploymentShapeHooks{TerminateTimeout: "5m"}
		case "pool":
			post.WarmPool = &api.DeploymentShapeWarmPool{Size: 1}
		case "broken":
			post.InstanceTemplate.Source.Alias = noInitImage
		}

		must(t, tt.admin.CreateDeploymentShape("dep1", post))
	}

	id := newIdentity(t)
	trustIdentity(t, tt.admin, id, "torture-gov", "deployments")
	must(t, tt.admin.CreateDeploymentKey("dep1", api.DeploymentKeysPost{DeploymentKeyPost: api.DeploymentKeyPost{Name: "gov"}, DeploymentKeyPut: api.DeploymentKeyPut{Role: "admin"}, CertificateFingerprint: id.Fingerprint}))
	tt.gov = tt.d.HTTPS(t, id)

	// The starting point: churn at its minimum, roll at its steady size.
	for _, shape := range []string{"churn", "roll", "roll", "roll"} {
		op, err := tt.gov.CreateDeploymentShapeInstance("dep1", shape, tt.nextName(shape))
		must(t, err)
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		err = op.Wait(ctx)
		cancel()
		must(t, err)
	}

	tt.start = time.Now()
	return tt
}

// publishNoInitImage publishes busybox without /sbin/init as noInitImage: a container made
// from it is created, then fails to start.
func (tt *torture) publishNoInitImage() {
	t := tt.t
	const source = "noinit-source"
	op, err := tt.lxdConn.CreateInstance(lxdapi.InstancesPost{Name: source, Source: lxdapi.InstanceSource{Type: "image", Alias: lxdtest.Image}})
	must(t, err)
	must(t, op.Wait())
	must(t, tt.lxdConn.DeleteInstanceFile(source, "/sbin/init"))
	publish, err := tt.lxdConn.CreateImage(lxdapi.ImagesPost{Source: &lxdapi.ImagesPostSource{Type: "instance", Name: source}, Aliases: []lxdapi.ImageAlias{{Name: noInitImage}}}, nil)
	must(t, err)
	must(t, publish.Wait())
	op, err = tt.lxdConn.DeleteInstance(source)
	must(t, err)
	must(t, op.Wait())
}

// restart kills the daemon with SIGKILL, as a crash would, and starts it again.
func (tt *torture) restart() error {
	tt.d.Kill(tt.t)
	if tt.d.tryStart(tt.t, tt.daemonArgs...) {
		return fmt.Errorf("lxd-deployd exited at restart")
	}

	online := poll(20*time.Second, func() bool {
		server, _, err := tt.admin.GetServer()
		return err == nil && server.Environment != nil && server.Environment.LXDStatus == "online"
	}, every(100*time.Millisecond))
	if !online {
		return fmt.Errorf("lxd-deployd did not reconnect to LXD within 20s of a restart")
	}

	return nil
}
