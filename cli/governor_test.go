package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	lxdapi "github.com/canonical/lxd/shared/api"

	"github.com/lxd-deployd/lxd-deployd/shared/api"
	"github.com/lxd-deployd/lxd-deployd/shared/policy"
	"github.com/lxd-deployd/lxd-deployd/shared/rules"
	"github.com/lxd-deployd/lxd-deployd/shared/webhook"
)

const testSecret = "s3cret"

var governorT0 = time.Date(2026, 11, 22, 19, 0, 0, 0, time.UTC)

// fakeScaler keeps shapes and instances in memory and refuses launches and deletes outside
// the bounds with a 409, as lxd-deployd does.
type fakeScaler struct {
	mu        sync.Mutex
	shapes    map[string]*api.DeploymentShape
	instances map[string][]api.DeploymentInstance
	ops       []string // "launch web/web-1", "delete web/web3", in the order they were asked
	created   int

	// refuseLaunchesAfter, when above 0, refuses launches with a 409 once that many were made
	// (someone else launched meanwhile).
	refuseLaunchesAfter int

	// deletingFor, when above 0, refuses that many launch attempts with a 409 at the
	// maximum, as lxd-deployd does while an instance is still being deleted; the next
	// attempt finds the deleting instances gone.
	deletingFor int

	// started, when set, receives each op as it starts; gate, when set, holds each op until
	// it is closed.
	started chan string
	gate    chan struct{}
}

func newFakeScaler() *fakeScaler {
	return &fakeScaler{shapes: map[string]*api.DeploymentShape{}, instances: map[string][]api.DeploymentInstance{}}
}

// addShape adds a shape with current instances named <shape>1, <shape>2, ... created an
// hour apart.
func (f *fakeScaler) addShape(name string, current int, minimum int, maximum int) {
	shape := &api.DeploymentShape{ScalingCurrent: current}
	shape.Name = name
	shape.ScalingMinimum = minimum
	shape.ScalingMaximum = maximum
	f.shapes[name] = shape
	for i := 1; i <= current; i++ {
		f.instances[name] = append(f.instances[name], api.DeploymentInstance{Name: fmt.Sprintf("%s%d", name, i), Shape: name, State: rules.Created, CreatedAt: governorT0.Add(time.Duration(i) * time.Hour)})
	}
}

func (f *fakeScaler) Shape(ctx context.Context, name string) (*api.DeploymentShape, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	shape, ok := f.shapes[name]
	if !ok {
		return nil, lxdapi.StatusErrorf(http.StatusNotFound, "shape not found")
	}

	copied := *shape
	return &copied, nil
}

func (f *fakeScaler) Instances(ctx context.Context, shape string) ([]api.DeploymentInstance, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.instances[shape]), nil
}

func (f *fakeScaler) Launch(ctx context.Context, shape string, name string) error {
	f.mu.Lock()
	s := f.shapes[shape]
	f.ops = append(f.ops, "launch "+shape+"/"+name)
	if f.deletingFor > 0 {
		f.deletingFor--
		f.mu.Unlock()
		return lxdapi.StatusErrorf(http.StatusConflict, "shape %s is at its scaling maximum (%d): 1 instance is still being deleted: retry when it is gone", shape, s.ScalingMaximum)
	}

	f.instances[shape] = slices.DeleteFunc(f.instances[shape], func(i api.DeploymentInstance) bool { return i.State == rules.Deleting })
	if s.ScalingCurrent >= s.ScalingMaximum || (f.refuseLaunchesAfter > 0 && f.created >= f.refuseLaunchesAfter) {
		f.mu.Unlock()
		return lxdapi.StatusErrorf(http.StatusConflict, "shape %s is at its scaling maximum (%d): raise scaling_maximum or delete an instance first", shape, s.ScalingMaximum)
	}

	f.created++
	s.ScalingCurrent++
	f.instances[shape] = append(f.instances[shape], api.DeploymentInstance{Name: name, Shape: shape, State: rules.Created, CreatedAt: governorT0.Add(time.Duration(100+f.created) * time.Hour)})
	f.mu.Unlock()
	return f.hold(ctx, "launch "+shape)
}

func (f *fakeScaler) Delete(ctx context.Context, shape string, name string) error {
	f.mu.Lock()
	s := f.shapes[shape]
	f.ops = append(f.ops, "delete "+shape+"/"+name)
	if s.ScalingCurrent <= s.ScalingMinimum {
		f.mu.Unlock()
		return lxdapi.StatusErrorf(http.StatusConflict, "shape %s is at its scaling minimum (%d)", shape, s.ScalingMinimum)
	}

	s.ScalingCurrent--
	f.instances[shape] = slices.DeleteFunc(f.instances[shape], func(i api.DeploymentInstance) bool { return i.Name == name })
	f.mu.Unlock()
	return f.hold(ctx, "delete "+shape)
}

func (f *fakeScaler) hold(ctx context.Context, op string) error {
	if f.started != nil {
		f.started <- op
	}

	if f.gate != nil {
		select {
		case <-f.gate:
		case <-ctx.Done():
			return ctx.Err()
		}
	}

	return nil
}

// opList returns the ops with the random instance names replaced by "*".
func (f *fakeScaler) opList() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	random := regexp.MustCompile(`-[a-z0-9]{6}$`)
	ops := make([]string, len(f.ops))
	for i, op := range f.ops {
		ops[i] = random.ReplaceAllString(op, "-*")
	}

	return ops
}

// governorLogBuffer collects the governor's log lines from several goroutines.
type governorLogBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *governorLogBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *governorLogBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// governorTest is a governor with a fake scaler behind an httptest server.
type governorTest struct {
	t      *testing.T
	scaler *fakeScaler
	g      *governor
	rc     *webhookReceiver
	srv    *httptest.Server
	logs   *governorLogBuffer

	mu  sync.Mutex
	now time.Time
}

func newGovernorTest(t *testing.T, p *policy.Policy, dryRun bool) *governorTest {
	t.Helper()
	gt := &governorTest{t: t, scaler: newFakeScaler(), logs: &governorLogBuffer{}, now: governorT0}
	log := slog.New(slog.NewTextHandler(gt.logs, &slog.HandlerOptions{Level: slog.LevelInfo}))
	ctx, cancel := context.WithCancel(context.Background())
	gt.g = newGovernor(ctx, gt.scaler, p, dryRun, log)
	gt.g.now = gt.clock
	gt.g.parallel = 1
	gt.rc = newReceiver(testSecret, "", "dep1", gt.g, log)
	gt.rc.now = gt.clock
	gt.srv = httptest.NewServer(gt.rc)
	t.Cleanup(func() {
		gt.srv.Close()
		cancel()
		gt.g.wait()
	})

	return gt
}

func (gt *governorTest) clock() time.Time {
	gt.mu.Lock()
	defer gt.mu.Unlock()
	return gt.now
}

func (gt *governorTest) advance(d time.Duration) {
	gt.mu.Lock()
	defer gt.mu.Unlock()
	gt.now = gt.now.Add(d)
}

// post sends a body with a signature header and returns the status.
func (gt *governorTest) post(body []byte, signature string) int {
	gt.t.Helper()
	req, err := http.NewRequest(http.MethodPost, gt.srv.URL+"/hooks/lxd", bytes.NewReader(body))
	if err != nil {
		gt.t.Fatal(err)
	}

	if signature != "" {
		req.Header.Set(webhook.SignatureHeader, signature)
	}

	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		gt.t.Fatal(err)
	}

	_, _ = io.Copy(io.Discard, resp.Body)
	_ = resp.Body.Close()
	return resp.StatusCode
}

// send signs an event as the daemon does and sends it.
func (gt *governorTest) send(event api.WebhookEvent) int {
	gt.t.Helper()
	body, err := json.Marshal(event)
	if err != nil {
		gt.t.Fatal(err)
	}

	return gt.post(body, webhook.Sign(testSecret, body, gt.clock()))
}

func testEvent(id string, eventType string, metadata any) api.WebhookEvent {
	data, err := json.Marshal(metadata)
	if err != nil {
		panic(err)
	}

	return api.WebhookEvent{ID: id, Timestamp: governorT0, Project: "default", Deployment: "dep1", Type: eventType, Metadata: data}
}

func testScaleRequest(id string, shape string, target int) api.WebhookEvent {
	return testEvent(id, api.WebhookScaleRequest, api.WebhookScaleRequestMetadata{Shape: shape, Target: target, Reason: "test", RequestedBy: "unix"})
}

// shapeMetrics reports current instances of which the first len(rates) are Running with
// those cpu rates.
func testShapeMetrics(shape string, current int, minimum int, maximum int, rates ...float64) api.WebhookShapeMetrics {
	m := api.WebhookShapeMetrics{ScalingCurrent: current, ScalingMinimum: minimum, ScalingMaximum: maximum, Instances: map[string]api.WebhookInstanceMetrics{}}
	for i := range current {
		instance := api.WebhookInstanceMetrics{Status: "Running"}
		if i < len(rates) {
			rate := rates[i]
			instance.CPURate = &rate
		}

		m.Instances[fmt.Sprintf("%s%d", shape, i+1)] = instance
	}

	return m
}

func testMetrics(id string, shapes map[string]api.WebhookShapeMetrics) api.WebhookEvent {
	return testEvent(id, api.WebhookMetrics, api.WebhookMetricsMetadata{IntervalSeconds: 60, Shapes: shapes})
}

func (gt *governorTest) wantOps(want ...string) {
	gt.t.Helper()
	got := gt.scaler.opList()
	if want == nil {
		want = []string{}
	}

	if !slices.Equal(got, want) {
		gt.t.Errorf("ops %q, want %q\nlogs:\n%s", got, want, gt.logs)
	}
}

func (gt *governorTest) wantLog(substrings ...string) {
	gt.t.Helper()
	logs := gt.logs.String()
	for _, s := range substrings {
		if !strings.Contains(logs, s) {
			gt.t.Errorf("logs do not say %q:\n%s", s, logs)
		}
	}
}

func governorCPUPolicy() *policy.Policy {
	web := policy.DefaultShape()
	web.CPUTarget = 0.5
	web.ScaleUpCooldown = 30 * time.Second
	web.ScaleDownCooldown = time.Minute
	web.ScaleDownStabilization = 2 * time.Minute
	return &policy.Policy{Shapes: map[string]policy.Shape{"web": web}}
}

func TestGovernorRejectsUnsignedDeliveries(t *testing.T) {
	gt := newGovernorTest(t, &policy.Policy{}, false)
	gt.scaler.addShape("web", 1, 0, 5)
	body, err := json.Marshal(testScaleRequest("ev1", "web", 3))
	if err != nil {
		t.Fatal(err)
	}

	tests := map[string]string{
		"unsigned":         "",
		"wrong secret":     webhook.Sign("other", body, governorT0),
		"stale":            webhook.Sign(testSecret, body, governorT0.Add(-6*time.Minute)),
		"from the future":  webhook.Sign(testSecret, body, governorT0.Add(6*time.Minute)),
		"malformed header": "v1=abc",
		"other body":       webhook.Sign(testSecret, []byte(`{"id":"ev1"}`), governorT0),
	}

	for name, signature := range tests {
		status := gt.post(body, signature)
		if status != http.StatusUnauthorized {
			t.Errorf("%s: status %d, want 401", name, status)
		}
	}

	gt.g.wait()
	gt.wantOps()
	gt.wantLog("webhook rejected", "is not signed", "does not match the body", "outside the 5 minute window")

	// Only POST.
	resp, err := http.Get(gt.srv.URL)
	if err != nil {
		t.Fatal(err)
	}

	_ = resp.Body.Close()
	if resp.StatusCode != http.StatusMethodNotAllowed {
		t.Errorf("GET: %d", resp.StatusCode)
	}

	// Within the window, the same delivery is accepted: the id was not remembered by the
	// rejections.
	if status := gt.post(body, webhook.Sign(testSecret, body, governorT0.Add(-4*time.Minute))); status != http.StatusAccepted {
		t.Errorf("signed 4 minutes ago: %d", status)
	}

	gt.g.wait()
	gt.wantOps("launch web/web-*", "launch web/web-*")
}

func TestGovernorRejectsBadEvents(t *testing.T) {
	gt := newGovernorTest(t, &policy.Policy{}, false)
	gt.scaler.addShape("web", 1, 0, 5)

	other := testScaleRequest("ev1", "web", 3)
	other.Deployment = "dep2"
	otherProject := testScaleRequest("ev2", "web", 3)
	otherProject.Project = "prod"
	noID := testScaleRequest("", "web", 3)
	badShape := testScaleRequest("ev3", "web_1", 3)
	badMetadata := testScaleRequest("ev4", "web", 3)
	badMetadata.Metadata = json.RawMessage(`{"shape": 3}`)

	for name, e := range map[string]api.WebhookEvent{"other deployment": other, "other project": otherProject, "no id": noID, "bad shape": badShape, "bad metadata": badMetadata} {
		if status := gt.send(e); status != http.StatusBadRequest {
			t.Errorf("%s: status %d, want 400", name, status)
		}
	}

	if status := gt.post([]byte("not json"), webhook.Sign(testSecret, []byte("not json"), governorT0)); status != http.StatusBadRequest {
		t.Errorf("not json: %d", status)
	}

	// A refused event's id is not remembered: fixed, it is acted on.
	if status := gt.send(testScaleRequest("ev4", "web", 2)); status != http.StatusAccepted {
		t.Errorf("ev4 fixed: %d", status)
	}

	gt.g.wait()
	gt.wantOps("launch web/web-*")
	gt.wantLog("this governor serves deployment dep1 of project default: check --deployment and --project")
}

func TestGovernorDedupesByID(t *testing.T) {
	gt := newGovernorTest(t, &policy.Policy{}, false)
	gt.scaler.addShape("web", 1, 0, 5)

	if status := gt.send(testScaleRequest("ev1", "web", 3)); status != http.StatusAccepted {
		t.Fatalf("first delivery: %d", status)
	}

	gt.g.wait()

	// Redeliveries, signed afresh, are acknowledged and not acted on, even after the
	// shape changed (an admin scaled down meanwhile).
	gt.scaler.mu.Lock()
	gt.scaler.shapes["web"].ScalingCurrent = 1
	gt.scaler.mu.Unlock()
	for range 3 {
		gt.advance(3 * time.Minute)
		if status := gt.send(testScaleRequest("ev1", "web", 3)); status != http.StatusOK {
			t.Errorf("redelivery: %d, want 200", status)
		}
	}

	gt.g.wait()
	gt.wantOps("launch web/web-*", "launch web/web-*")
	gt.wantLog("duplicate event acknowledged")
	if n := strings.Count(gt.logs.String(), "msg=decision"); n != 1 {
		t.Errorf("%d decisions, want 1:\n%s", n, gt.logs)
	}
}

func TestIDCache(t *testing.T) {
	c := newIDCache(10 * time.Minute)
	if !c.add("a", governorT0) || c.add("a", governorT0.Add(9*time.Minute)) {
		t.Error("a second delivery within the TTL must be refused")
	}

	if !c.add("b", governorT0.Add(time.Minute)) {
		t.Error("another id")
	}

	// Past the TTL, the id is forgotten (and pruned).
	if !c.add("a", governorT0.Add(10*time.Minute)) {
		t.Error("a after the TTL")
	}

	c.add("c", governorT0.Add(12*time.Minute))
	c.mu.Lock()
	_, kept := c.seen["b"]
	c.mu.Unlock()
	if kept {
		t.Error("b was not pruned")
	}
}

func TestGovernorAnswersBeforeActing(t *testing.T) {
	gt := newGovernorTest(t, &policy.Policy{}, false)
	gt.scaler.addShape("web", 1, 0, 5)
	gt.scaler.started = make(chan string, 10)
	gt.scaler.gate = make(chan struct{})

	// The launch is held, yet the delivery is answered.
	if status := gt.send(testScaleRequest("ev1", "web", 2)); status != http.StatusAccepted {
		t.Fatalf("status %d", status)
	}

	select {
	case op := <-gt.scaler.started:
		if op != "launch web" {
			t.Errorf("started %q", op)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the launch never started")
	}

	close(gt.scaler.gate)
	gt.g.wait()
	gt.wantOps("launch web/web-*")
	gt.wantLog("msg=launched shape=web event=ev1")
}
