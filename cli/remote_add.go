package main

import (
	"crypto/sha256"
	"crypto/tls"
	"encoding/hex"
	"encoding/pem"
	"errors"
	"fmt"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/canonical/lxd/shared"
	lxdapi "github.com/canonical/lxd/shared/api"
	"github.com/spf13/cobra"

	"github.com/lxd-deployd/lxd-deployd/shared/validate"
)

// defaultHTTPSPort is lxd-deployd's default HTTPS port (its --https-address).
const defaultHTTPSPort = "8444"

// dialTimeout bounds the TLS handshake that fetches a server's certificate.
const dialTimeout = 5 * time.Second

func (a *app) remoteAddCommand() *cobra.Command {
	var token string
	var acceptCertificate bool
	var protocol string
	var public bool
	cmd := &cobra.Command{
		Use:   "add <name> [<https://host[:port]>|<token>]",
		Short: "Add a remote daemon, trusting this client with a trust token",
		Long: "Add a remote lxd-deployd. Get a trust token on the server with\n" +
			"\"lxd-deploy config trust add --name <client-name>\", then either\n\n" +
			"  lxd-deploy remote add prod <token>                      (addresses from the token)\n" +
			"  lxd-deploy remote add prod https://host:8444 --token <token>\n\n" +
			"The server's certificate must match the fingerprint in the token. Without a token, the server\n" +
			"must already trust this client's certificate, and --accept-certificate pins the server's.\n\n" +
			"With --protocol lxd or simplestreams, add an image server instead, as \"lxc remote add\" does, for\n" +
			"\"deployment shape create --from-image NAME:ALIAS\" (LXD pulls from it at launch):\n\n" +
			"  lxd-deploy remote add myimages https://images.example:8443 --protocol lxd [--accept-certificate]",
		Args: rangeArgs(1, 2),
		RunE: func(cmd *cobra.Command, args []string) error {
			addr := ""
			if len(args) > 1 {
				addr = args[1]
			}

			if protocol != "" {
				return a.remoteAddImages(args[0], addr, protocol, acceptCertificate)
			}

			return a.remoteAdd(args[0], addr, token, acceptCertificate)
		},
	}

	cmd.Flags().StringVar(&protocol, "protocol", "", "lxd or simplestreams: add an image server for --from-image (default: an lxd-deployd)")
	cmd.Flags().BoolVar(&public, "public", false, "accepted as lxc takes it: image servers are always read without credentials")

	cmd.Flags().StringVar(&token, "token", "", "trust token from \"lxd-deploy config trust add --name NAME\" on the server")
	cmd.Flags().BoolVar(&acceptCertificate, "accept-certificate", false, "without a token: pin the server's certificate without checking its fingerprint")
	return cmd
}

// remoteAdd adds a remote: it finds the server, checks its certificate against the
// token's fingerprint, pins it, redeems the token for this client's certificate, and
// saves the remote only once the server says it trusts us.
func (a *app) remoteAdd(name string, addrArg string, tokenArg string, acceptCertificate bool) error {
	c, err := a.configForNewRemote(name)
	if err != nil {
		return err
	}

	token, addrArg, err := decodeTokenArg(addrArg, tokenArg)
	if err != nil {
		return err
	}

	if token == nil && addrArg == "" {
		return fmt.Errorf("give the server's address (https://host:port) or a trust token")
	}

	if token == nil && !acceptCertificate {
		return fmt.Errorf("without a trust token the server's certificate cannot be checked: get a token on the server (lxd-deploy config trust add --name NAME) or pass --accept-certificate")
	}

	addresses := []string{addrArg}
	if addrArg == "" {
		addresses = token.Addresses
	}

	certPEM, keyPEM, err := c.clientCert()
	if err != nil {
		return err
	}

	clientPair, err := tls.X509KeyPair([]byte(certPEM), []byte(keyPEM))
	if err != nil {
		return fmt.Errorf("load the client certificate: %w", err)
	}

	// The first address that answers wins; a certificate that does not match the token
	// stops everything, as it means this is not the server that issued the token.
	var failures []error
	for _, raw := range addresses {
		addr, err := normalizeAddr(raw)
		if err != nil {
			return err
		}

		serverCert, err := fetchServerCert(addr, clientPair)
		if err != nil {
			a.log().Debug("address does not answer", "address", addr, "err", err)
			failures = append(failures, err)
			continue
		}

		if token != nil {
			fingerprint := certFingerprint(serverCert)
			if !strings.EqualFold(fingerprint, token.Fingerprint) {
				return fmt.Errorf("the certificate of %s (fingerprint %s) does not match the trust token's (%s): refusing to add it", addr, fingerprint, token.Fingerprint)
			}
		}

		return a.pinAndTrust(c, name, addr, serverCert, token)
	}

	return fmt.Errorf("no address of the server answered: %w", errors.Join(failures...))
}

// decodeTokenArg finds the trust token: the --token flag, or a second argument that is a
// token rather than an address (as "lxc remote add NAME TOKEN" allows).
func decodeTokenArg(addrArg string, tokenArg string) (*lxdapi.CertificateAddToken, string, error) {
	if tokenArg != "" {
		token, err := shared.CertificateTokenDecode(strings.TrimSpace(tokenArg))
		if err != nil {
			return nil, "", fmt.Errorf("trust token is not valid: %w", err)
		}

		return checkExpiry(token, addrArg)
	}

	if addrArg == "" {
		return nil, "", nil
	}

	token, err := shared.CertificateTokenDecode(strings.TrimSpace(addrArg))
	if err != nil {
		// Not a token: an address.
		return nil, addrArg, nil
	}

	return checkExpiry(token, "")
}

func checkExpiry(token *lxdapi.CertificateAddToken, addr string) (*lxdapi.CertificateAddToken, string, error) {
	if !token.ExpiresAt.IsZero() && time.Now().After(token.ExpiresAt) {
		return nil, "", fmt.Errorf("trust token expired at %s: ask for a new one", token.ExpiresAt.Local().Format(time.RFC3339))
	}

	return token, addr, nil
}

// normalizeAddr turns host, host:port or https://host[:port] into https://host:port.
func normalizeAddr(raw string) (string, error) {
	hostPort := raw
	if strings.Contains(raw, "://") {
		u, err := url.Parse(raw)
		if err != nil || u.Scheme != "https" || u.Host == "" || (u.Path != "" && u.Path != "/") {
			return "", fmt.Errorf("remote address %q is not valid: use https://host[:port]", raw)
		}

		hostPort = u.Host
	}

	_, _, err := net.SplitHostPort(hostPort)
	if err != nil {
		hostPort = net.JoinHostPort(strings.Trim(hostPort, "[]"), defaultHTTPSPort)
	}

	return "https://" + hostPort, nil
}

// fetchServerCert does a TLS handshake to read the server's certificate, which is
// self-signed and so checked against the token's fingerprint instead of a CA.
func fetchServerCert(addr string, clientPair tls.Certificate) ([]byte, error) {
	hostPort := strings.TrimPrefix(addr, "https://")
	dialer := &net.Dialer{Timeout: dialTimeout}
	conn, err := tls.DialWithDialer(dialer, "tcp", hostPort, &tls.Config{
		InsecureSkipVerify: true, // Checked against the token's fingerprint by the caller.
		MinVersion:         tls.VersionTLS12,
		Certificates:       []tls.Certificate{clientPair},
	})
	if err != nil {
		return nil, fmt.Errorf("%s: %w", addr, err)
	}

	defer func() { _ = conn.Close() }()
	peers := conn.ConnectionState().PeerCertificates
	if len(peers) == 0 {
		return nil, fmt.Errorf("%s sent no certificate", addr)
	}

	return peers[0].Raw, nil
}

func certFingerprint(der []byte) string {
	sum := sha256.Sum256(der)
	return hex.EncodeToString(sum[:])
}

// pinAndTrust saves the server certificate, gets this client trusted (redeeming the token
// if it is not yet) and saves the remote. On failure nothing is left behind.
func (a *app) pinAndTrust(c *config, name string, addr string, serverCert []byte, token *lxdapi.CertificateAddToken) (err error) {
	certPath := c.serverCertPath(name)
	err = os.MkdirAll(filepath.Dir(certPath), 0o700)
	if err != nil {
		return err
	}

	err = os.WriteFile(certPath, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: serverCert}), 0o600)
	if err != nil {
		return err
	}

	defer func() {
		if err != nil {
			_ = os.Remove(certPath)
		}
	}()

	c.Remotes[name] = remoteConfig{Addr: addr}
	server, err := a.connect(c, name)
	if err != nil {
		return err
	}

	info, _, err := server.GetServer()
	if err != nil {
		return err
	}

	if info.Auth != "trusted" {
		if token == nil {
			return fmt.Errorf("%s does not trust this client: get a trust token on the server (lxd-deploy config trust add --name NAME) and add the remote with it", addr)
		}

		err = server.CreateCertificate(lxdapi.CertificatesPost{TrustToken: token.Secret})
		if err != nil {
			return fmt.Errorf("redeem the trust token: %w", err)
		}

		info, _, err = server.GetServer()
		if err != nil {
			return err
		}

		if info.Auth != "trusted" {
			return fmt.Errorf("%s accepted the trust token but still does not trust this client", addr)
		}
	}

	err = c.save()
	if err != nil {
		return err
	}

	_, err = fmt.Fprintf(a.stdout, "Remote %s added (%s)\n", name, addr)
	return err
}

// configForNewRemote loads the CLI's config for adding remote name: a valid name, not the
// built-in local remote, not one already there.
func (a *app) configForNewRemote(name string) (*config, error) {
	err := validate.Name("remote", name)
	if err != nil {
		return nil, err
	}

	c, err := a.loadConfig()
	if err != nil {
		return nil, err
	}

	if name == localRemote {
		return nil, fmt.Errorf("remote %q is built in (this machine's daemon): choose another name", localRemote)
	}

	if _, exists := c.Remotes[name]; exists {
		return nil, fmt.Errorf("remote %q already exists: remove it first (lxd-deploy remote remove %s)", name, name)
	}

	return c, nil
}
