package health

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/netip"
	"strconv"
	"time"

	"github.com/lxd-deployd/lxd-deployd/lxd-deployd/backend"
	"github.com/lxd-deployd/lxd-deployd/lxd-deployd/dialpolicy"
	"github.com/lxd-deployd/lxd-deployd/shared/api"
)

// addressAge is how old a listing of a project's instance addresses may be to serve the
// http and tcp checks of its instances: one LXD request a few seconds, not one per check.
const addressAge = 3 * time.Second

// Listings is the observed snapshot of LXD's instances (observed.Snapshot.Serving): a
// project's instances with their state, as LXD listed them at most maxAge ago, or why LXD
// did not list them (never an empty listing for an LXD that did not answer).
type Listings interface {
	Serving(ctx context.Context, project string, maxAge time.Duration) (map[string]backend.Serving, error)
}

// addressOf is the instance's address in a listing of its project (err: why there is no
// listing, which is no verdict on the instance: errNoListing).
func addressOf(listing map[string]backend.Serving, err error, name string) (netip.Addr, error) {
	if err != nil {
		return netip.Addr{}, fmt.Errorf("%w: %w", errNoListing, err)
	}

	addr := listing[name].Address
	if !addr.IsValid() {
		return netip.Addr{}, fmt.Errorf("LXD reports no global address for the instance on a NIC LXD attached: give it a network (a nic device), or use an exec or ttl check")
	}

	return addr, nil
}

// ErrDestination is wrapped by a probe's refusal to dial an address.
var ErrDestination = errors.New("health check destination not allowed")

// probeDestinations is what http and tcp checks may dial. An instance's address is what
// root inside it chose (LXD reports what the instance's interfaces carry): a check aimed at
// ::ffff:127.0.0.1 would reach the host's own services and store their answer as check
// output, ::ffff:169.254.169.254 a cloud's metadata. Webhooks share the rule
// (dialpolicy), with loopback refused here too.
var probeDestinations = dialpolicy.Policy{RefuseLoopback: true, Err: ErrDestination}

// prober runs http and tcp checks through one dialer under a destination policy: the tcp
// check and the http client both dial through it, so no path skips the policy.
type prober struct {
	dialer *net.Dialer
	client *http.Client
}

// newProber returns a prober whose every connection is checked against the policy.
func newProber(policy dialpolicy.Policy) *prober {
	dialer := &net.Dialer{Control: policy.Control}
	return &prober{
		dialer: dialer,
		// No proxy from the environment, no redirects followed (a 3xx passes), no
		// connections kept (a thousand instances would hold a thousand idle sockets).
		client: &http.Client{
			Transport: &http.Transport{
				Proxy:             nil,
				DisableKeepAlives: true,
				DialContext:       dialer.DialContext,
			},
			CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
		},
	}
}

// defaultProber is the one prober of every http and tcp check.
var defaultProber = newProber(probeDestinations)

// Probe runs an http or tcp check against addr within the settings' timeout.
func Probe(ctx context.Context, s Settings, addr netip.Addr) Result {
	return defaultProber.probe(ctx, s, addr)
}

func (p *prober) probe(ctx context.Context, s Settings, addr netip.Addr) Result {
	ctx, cancel := context.WithTimeout(ctx, s.Timeout)
	defer cancel()
	target := net.JoinHostPort(addr.Unmap().String(), strconv.Itoa(s.Port))
	result := Result{At: time.Now(), ExitCode: -1}
	if s.Kind == api.HealthKindTCP {
		conn, err := p.dialer.DialContext(ctx, "tcp", target)
		if err != nil {
			result.Output = truncate(fmt.Sprintf("cannot connect to %s: %v", target, err))
			return classifyDial(result, err)
		}

		_ = conn.Close()
		result.Passed, result.ExitCode, result.Output = true, 0, "connected to "+target
		return result
	}

	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+target+s.Path, nil)
	if err != nil {
		result.Output = truncate(fmt.Sprintf("bad check request: %v", err))
		return result
	}

	req.Header.Set("User-Agent", "lxd-deployd-health-check")
	resp, err := p.client.Do(req)
	if err != nil {
		result.Output = truncate(fmt.Sprintf("GET %s: %v", req.URL, err))
		return classifyDial(result, err)
	}

	defer resp.Body.Close()
	body, _ := io.ReadAll(io.LimitReader(resp.Body, OutputLimit))
	result.ExitCode = resp.StatusCode
	result.Output = truncate(fmt.Sprintf("HTTP %d: %s", resp.StatusCode, body))
	if resp.StatusCode >= 200 && resp.StatusCode < 400 {
		result.Passed, result.ExitCode = true, 0
	}

	return result
}

// probe finds the instance's address in the observed listing of its project and runs its
// http or tcp check.
func (c *Checker) probe(ctx context.Context, t target) Result {
	listing, err := c.Listings.Serving(ctx, t.row.Project, addressAge)
	addr, err := addressOf(listing, err, t.row.Name)
	if errors.Is(err, errNoListing) {
		// LXD did not say where the instance is: nothing is known of the instance.
		c.sawOutage()
		return Result{At: time.Now(), ExitCode: -1, NoVerdict: true, Output: truncate(fmt.Sprintf("check did not run: %v", err))}
	}

	if err != nil {
		return Result{At: time.Now(), ExitCode: -1, Output: truncate(fmt.Sprintf("check did not run: %v", err))}
	}

	return Probe(ctx, t.settings, addr)
}
