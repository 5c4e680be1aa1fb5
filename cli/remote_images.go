package main

import (
	"bytes"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"time"

	lxdapi "github.com/canonical/lxd/shared/api"
)

// Image servers: remotes that serve images to shapes' --from-image, as "lxc remote add
// NAME URL --protocol lxd|simplestreams --public" adds them for "lxc launch NAME:ALIAS".
// lxd-deploy never downloads an image itself: the shape's instance_template names the
// server (source.server, source.protocol, source.certificate) and LXD pulls from it at
// launch, exactly as it does for "lxc launch".
const (
	imageProtocolLXD           = "lxd"
	imageProtocolSimplestreams = "simplestreams"

	// defaultLXDImagePort is LXD's HTTPS port, for an lxd image server given without one.
	defaultLXDImagePort = "8443"
)

// imageServer is an image-server remote as a shape's source names it.
type imageServer struct {
	Addr        string
	Protocol    string
	Certificate string // PEM, the pinned certificate; "" when a known authority signs it
}

// imageServers returns the configured image-server remotes with their pinned certificates.
func (c *config) imageServers() (map[string]imageServer, error) {
	servers := map[string]imageServer{}
	for name, r := range c.Remotes {
		if r.Protocol == "" {
			continue
		}

		server := imageServer{Addr: r.Addr, Protocol: r.Protocol}
		data, err := os.ReadFile(c.serverCertPath(name))
		switch {
		case err == nil:
			server.Certificate = string(data)
		case !errors.Is(err, os.ErrNotExist):
			return nil, err
		}

		servers[name] = server
	}

	return servers, nil
}

// remoteImageSource is the instance source of "<remote>:<alias or fingerprint>" on a
// configured image server; an unknown remote, or an lxd-deployd one, is an error saying
// how to add the image server.
func remoteImageSource(image string, servers map[string]imageServer) (lxdapi.InstanceSource, error) {
	remote, ref, _ := strings.Cut(image, ":")
	server, ok := servers[remote]
	if !ok {
		return lxdapi.InstanceSource{}, fmt.Errorf("--from-image %q: %q is not an image server remote of lxd-deploy (images from other remotes are not supported): add it as lxc does, \"lxd-deploy remote add %s https://HOST[:PORT] --protocol lxd\" (or --protocol simplestreams), or copy the image into the LXD lxd-deployd uses (lxc image copy %s local: --alias NAME) and give its alias", image, remote, remote, image)
	}

	if ref == "" {
		return lxdapi.InstanceSource{}, fmt.Errorf("--from-image %q: give an alias or fingerprint after %q", image, remote+":")
	}

	source := imageSource(ref)
	source.Server = server.Addr
	source.Protocol = server.Protocol
	source.Certificate = server.Certificate
	source.Mode = "pull"
	return source, nil
}

// normalizeImageServerAddr checks an image server's URL: https://host[:port] for lxd
// (port 8443 by default), any https URL for simplestreams.
func normalizeImageServerAddr(raw string, protocol string) (string, error) {
	if !strings.Contains(raw, "://") {
		raw = "https://" + raw
	}

	u, err := url.Parse(raw)
	if err != nil || u.Scheme != "https" || u.Host == "" || u.RawQuery != "" || u.Fragment != "" {
		return "", fmt.Errorf("image server address %q is not valid: use https://host[:port]%s", raw, map[bool]string{true: "[/path]"}[protocol == imageProtocolSimplestreams])
	}

	if protocol == imageProtocolLXD {
		if u.Path != "" && u.Path != "/" {
			return "", fmt.Errorf("image server address %q is not valid: an lxd image server is https://host[:port], without a path", raw)
		}

		if u.Port() == "" {
			u.Host = net.JoinHostPort(strings.Trim(u.Host, "[]"), defaultLXDImagePort)
		}

		return "https://" + u.Host, nil
	}

	return strings.TrimSuffix(u.String(), "/"), nil
}

// remoteAddImages checks the name as remoteAdd does, then adds an image server.
func (a *app) remoteAddImages(name string, addr string, protocol string, acceptCertificate bool) error {
	c, err := a.configForNewRemote(name)
	if err != nil {
		return err
	}

	return a.remoteAddImageServer(c, name, addr, protocol, acceptCertificate)
}

// remoteAddImageServer adds an image server: it reads the server's certificate, pins it
// when no known authority signs it (only with --accept-certificate, as for lxc), checks that
// the server answers as the protocol says, and saves the remote.
func (a *app) remoteAddImageServer(c *config, name string, addrArg string, protocol string, acceptCertificate bool) (err error) {
	if protocol != imageProtocolLXD && protocol != imageProtocolSimplestreams {
		return fmt.Errorf("--protocol %q is not known: use lxd or simplestreams for an image server (no --protocol: an lxd-deployd)", protocol)
	}

	if addrArg == "" {
		return fmt.Errorf("give the image server's address: lxd-deploy remote add %s https://HOST[:PORT] --protocol %s", name, protocol)
	}

	addr, err := normalizeImageServerAddr(addrArg, protocol)
	if err != nil {
		return err
	}

	u, _ := url.Parse(addr)
	hostPort := u.Host
	if u.Port() == "" {
		hostPort = net.JoinHostPort(u.Hostname(), "443")
	}

	dialer := &net.Dialer{Timeout: dialTimeout}
	conn, err := tls.DialWithDialer(dialer, "tcp", hostPort, &tls.Config{
		InsecureSkipVerify: true, // Verified below, against the system's authorities or by --accept-certificate.
		MinVersion:         tls.VersionTLS12,
	})
	if err != nil {
		return fmt.Errorf("image server %s does not answer: %w", addr, err)
	}

	peers := conn.ConnectionState().PeerCertificates
	_ = conn.Close()
	if len(peers) == 0 {
		return fmt.Errorf("image server %s sent no certificate", addr)
	}

	var pinned []byte
	_, verifyErr := peers[0].Verify(x509.VerifyOptions{DNSName: u.Hostname(), Intermediates: certPool(peers[1:])})
	if verifyErr != nil {
		if !acceptCertificate {
			return fmt.Errorf("the certificate of image server %s (fingerprint %s) is not signed by an authority this machine knows: check the fingerprint and pass --accept-certificate to pin it", addr, certFingerprint(peers[0].Raw))
		}

		pinned = peers[0].Raw
	}

	err = probeImageServer(addr, protocol, pinned)
	if err != nil {
		return err
	}

	certPath := c.serverCertPath(name)
	if pinned != nil {
		err = os.MkdirAll(filepath.Dir(certPath), 0o700)
		if err == nil {
			err = os.WriteFile(certPath, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: pinned}), 0o600)
		}

		if err != nil {
			return err
		}

		defer func() {
			if err != nil {
				_ = os.Remove(certPath)
			}
		}()
	}

	c.Remotes[name] = remoteConfig{Addr: addr, Protocol: protocol, Public: true}
	err = c.save()
	if err != nil {
		return err
	}

	_, err = fmt.Fprintf(a.stdout, "Image server %s added (%s, %s)\n", name, addr, protocol)
	return err
}

// certPool holds certs (a chain's intermediates).
func certPool(certs []*x509.Certificate) *x509.CertPool {
	pool := x509.NewCertPool()
	for _, cert := range certs {
		pool.AddCert(cert)
	}

	return pool
}

// probeImageServer checks that addr answers as an image server of protocol: LXD's public
// GET /1.0, or a simplestreams index. A pinned certificate (DER) must be the server's
// exactly, whatever names it holds (LXD's name no host); else the system's authorities
// check it.
func probeImageServer(addr string, protocol string, pinned []byte) error {
	config := &tls.Config{MinVersion: tls.VersionTLS12}
	if pinned != nil {
		config.InsecureSkipVerify = true // Checked against the one pinned certificate below.
		config.VerifyPeerCertificate = func(raw [][]byte, _ [][]*x509.Certificate) error {
			if len(raw) == 0 || !bytes.Equal(raw[0], pinned) {
				return errors.New("the server's certificate changed since it was read")
			}

			return nil
		}
	}

	httpClient := &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{TLSClientConfig: config, Proxy: http.ProxyFromEnvironment}}
	probe := addr + "/1.0"
	if protocol == imageProtocolSimplestreams {
		probe = addr + "/streams/v1/index.json"
	}

	resp, err := httpClient.Get(probe)
	if err != nil {
		return fmt.Errorf("image server %s does not answer: %w", addr, err)
	}

	defer func() { _ = resp.Body.Close() }()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("%s answered %s: is it an %s image server?", probe, resp.Status, protocol)
	}

	if protocol == imageProtocolLXD {
		var envelope struct {
			Type string `json:"type"`
		}

		err = json.NewDecoder(io.LimitReader(resp.Body, 1<<20)).Decode(&envelope)
		if err != nil || envelope.Type != "sync" {
			return fmt.Errorf("%s does not answer as LXD does: is it an lxd image server?", probe)
		}
	}

	return nil
}
